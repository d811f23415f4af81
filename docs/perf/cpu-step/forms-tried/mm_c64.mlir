!grad_out = tensor<16x64x16x16xf32>
!weight = tensor<64x64x1x1xf32>
!grad_in = tensor<16x64x16x16xf32>
!d0 = tensor<16x64x16x16xf32>
func.func @f(%grad_out: !grad_out, %weight: !weight, %d0: !d0, %dst: !grad_in {iree.abi.output = 0 : index}, %transients: !hal.buffer {iree.abi.transients}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %go = tensor.collapse_shape %grad_out [[0], [1], [2, 3]] : !grad_out into tensor<16x64x256xf32>
  %w = tensor.collapse_shape %weight [[0], [1, 2, 3]] : !weight into tensor<64x64xf32>
  %wt_e = tensor.empty() : tensor<64x64xf32>
  %wt = linalg.transpose ins(%w : tensor<64x64xf32>) outs(%wt_e : tensor<64x64xf32>) permutation = [1, 0]
  %acc_empty = tensor.empty() : tensor<16x64x256xf32>
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : tensor<16x64x256xf32>) -> tensor<16x64x256xf32>
  %acc = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, r) -> (m, r)>, affine_map<(b, m, n, r) -> (b, r, n)>, affine_map<(b, m, n, r) -> (b, m, n)>]
      ins(%wt, %go : tensor<64x64xf32>, tensor<16x64x256xf32>) outs(%acc_zero : tensor<16x64x256xf32>) -> tensor<16x64x256xf32>
  %accf = tensor.expand_shape %acc [[0], [1], [2, 3]] output_shape [16, 64, 16, 16] : tensor<16x64x256xf32> into tensor<16x64x16x16xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%accf, %d0 : tensor<16x64x16x16xf32>, !d0) outs(%dst : !grad_in) {
  ^bb0(%a: f32, %d: f32, %unused: f32):
    %le = arith.cmpf ole, %d, %zero : f32
    %v = arith.select %le, %zero, %a : f32
    linalg.yield %v : f32
  } -> !grad_in
  return %out : !grad_in
}
