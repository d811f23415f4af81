// IREE 3.13 (and its MLIR): iree-compile crashes in mlir::linalg::inferConvolutionDims (AnnotateDispatchesPass)
// on a generic whose input index is (jr * 2 + o) * 2 + f: a convolution window whose output row is itself split
// into (chunk, row). Any target; for example:
//   iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu module.mlir -o m.vmfb
// From a depthwise weight gradient with its output rows split into chunks of 2 (issue 45, seventh stop).
func.func @m(%x: tensor<2x4x9x9xf32>, %g: tensor<2x4x2x2x4xf32>) -> tensor<2x2x4x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2x4x3x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x4x3x3xf32>) -> tensor<2x2x4x3x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(j, jr, c, f0, f1, o0, o1) -> (j, c, (jr * 2 + o0) * 2 + f0, o1 * 2 + f1)>, affine_map<(j, jr, c, f0, f1, o0, o1) -> (j, c, jr, o0, o1)>, affine_map<(j, jr, c, f0, f1, o0, o1) -> (j, jr, c, f0, f1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %g : tensor<2x4x9x9xf32>, tensor<2x4x2x2x4xf32>) outs(%z : tensor<2x2x4x3x3xf32>) {
  ^bb0(%xv: f32, %gv: f32, %acc: f32):
    %p = arith.mulf %xv, %gv : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x2x4x3x3xf32>
  return %r : tensor<2x2x4x3x3xf32>
}
