
func.func @conv_bwd_data_2d_nchw_float32_n64_g1_c144_k24_i56x56_f1x1_s1x1_d1x1_p0_0x0_0(%g4: tensor<64x24x56x56xf32>, %w4: tensor<24x144x1x1xf32>, %dst: tensor<64x144x56x56xf32> {iree.abi.output = 0 : index}) -> tensor<64x144x56x56xf32> {
  %zero = arith.constant 0.0 : f32
  %g = tensor.collapse_shape %g4 [[0], [1], [2, 3]] : tensor<64x24x56x56xf32> into tensor<64x24x3136xf32>
  %w = tensor.collapse_shape %w4 [[0], [1, 2, 3]] : tensor<24x144x1x1xf32> into tensor<24x144xf32>
  %d = tensor.collapse_shape %dst [[0], [1], [2, 3]] : tensor<64x144x56x56xf32> into tensor<64x144x3136xf32>
  %z = linalg.fill ins(%zero : f32) outs(%d : tensor<64x144x3136xf32>) -> tensor<64x144x3136xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, c, p, k) -> (n, k, p)>, affine_map<(n, c, p, k) -> (k, c)>, affine_map<(n, c, p, k) -> (n, c, p)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%g, %w : tensor<64x24x3136xf32>, tensor<24x144xf32>) outs(%z : tensor<64x144x3136xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %s, %m : f32
    linalg.yield %t : f32
  } -> tensor<64x144x3136xf32>
  %r4 = tensor.expand_shape %r [[0], [1], [2, 3]] output_shape [64, 144, 56, 56] : tensor<64x144x3136xf32> into tensor<64x144x56x56xf32>
  return %r4 : tensor<64x144x56x56xf32>
}
