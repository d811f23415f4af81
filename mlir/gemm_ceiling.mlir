// IREE's own GEMM of a convolution's implicit-GEMM shape, the ceiling build_tools/bench.py sets beside a backward
// convolution: per group g, c[g] = a[g] x b[g] with the convolution's M x N x K (the same multiply-adds), its
// element type in and float32 accumulation, as the operators have it.

!a = tensor<${groups}x${m}x${k}x${element}>
!b = tensor<${groups}x${k}x${n}x${element}>
!c = tensor<${groups}x${m}x${n}xf32>

func.func @${function}(%a: !a, %b: !b, %dst: !c {iree.abi.output = 0 : index}${transients}) -> !c {
  %zero = arith.constant 0.0 : f32
  %c_zero = linalg.fill ins(%zero : f32) outs(%dst : !c) -> !c
  %c = linalg.batch_matmul ins(%a, %b : !a, !b) outs(%c_zero : !c) -> !c
  return %c : !c
}
