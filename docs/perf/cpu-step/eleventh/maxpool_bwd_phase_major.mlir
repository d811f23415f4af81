// resnext2d's max-pooling backward as in maxpool_bwd_floordiv.mlir, the grid (n, c, qh, rh, rw, qw): the stride
// phases outer, the candidates read along qw, then a linalg.transpose into grad_in. iree-benchmark-module on 2
// workers: 0.43-0.58 ms against the shipped grid's 0.46-0.68 in the same runs.

!grad_out = tensor<16x32x16x16xf32>
!grad_in = tensor<16x32x32x32xf32>
!windows_g = tensor<16x32x17x17xf32>
!slot_g = tensor<16x32x16x16xf32>
!windows_index = tensor<16x32x17x17xi64>
!argmax = tensor<16x32x16x16xi64>

func.func @maxpool2d_bwd_nchw_float32_n16_c32_i32x32_o16x16_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64(%grad_out: !grad_out, %indices: !argmax) -> !grad_in {
  %zero_element = arith.constant 0.0 : f32
  %no_window = arith.constant -1 : i64
  // indices: each window's argmax, from maxpool2d_fwd
  %g_padded = tensor.pad %grad_out low[0, 0, 0, 0] high[0, 0, 1, 1] {
  ^bb0(%p0: index, %p1: index, %p2: index, %p3: index):
    tensor.yield %zero_element : f32
  } : !grad_out to !windows_g
  %argmax_padded = tensor.pad %indices low[0, 0, 0, 0] high[0, 0, 1, 1] {
  ^bb0(%p0: index, %p1: index, %p2: index, %p3: index):
    tensor.yield %no_window : i64
  } : !argmax to !windows_index
  %windows_g_0 = tensor.extract_slice %g_padded[0, 0, 0, 0] [16, 32, 16, 16] [1, 1, 1, 1] : !windows_g to !slot_g
  %windows_argmax_0 = tensor.extract_slice %argmax_padded[0, 0, 0, 0] [16, 32, 16, 16] [1, 1, 1, 1] : !windows_index to tensor<16x32x16x16xi64>
  %windows_g_1 = tensor.extract_slice %g_padded[0, 0, 0, 1] [16, 32, 16, 16] [1, 1, 1, 1] : !windows_g to !slot_g
  %windows_argmax_1 = tensor.extract_slice %argmax_padded[0, 0, 0, 1] [16, 32, 16, 16] [1, 1, 1, 1] : !windows_index to tensor<16x32x16x16xi64>
  %windows_g_2 = tensor.extract_slice %g_padded[0, 0, 1, 0] [16, 32, 16, 16] [1, 1, 1, 1] : !windows_g to !slot_g
  %windows_argmax_2 = tensor.extract_slice %argmax_padded[0, 0, 1, 0] [16, 32, 16, 16] [1, 1, 1, 1] : !windows_index to tensor<16x32x16x16xi64>
  %windows_g_3 = tensor.extract_slice %g_padded[0, 0, 1, 1] [16, 32, 16, 16] [1, 1, 1, 1] : !windows_g to !slot_g
  %windows_argmax_3 = tensor.extract_slice %argmax_padded[0, 0, 1, 1] [16, 32, 16, 16] [1, 1, 1, 1] : !windows_index to tensor<16x32x16x16xi64>
  %grid_dst = tensor.empty() : tensor<16x32x16x2x2x16xf32>
  %grid = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%windows_g_0, %windows_argmax_0, %windows_g_1, %windows_argmax_1, %windows_g_2, %windows_argmax_2, %windows_g_3, %windows_argmax_3 : !slot_g, tensor<16x32x16x16xi64>, !slot_g, tensor<16x32x16x16xi64>, !slot_g, tensor<16x32x16x16xi64>, !slot_g, tensor<16x32x16x16xi64>) outs(%grid_dst : tensor<16x32x16x2x2x16xf32>) {
  ^bb0(%g_0: f32, %argmax_0: i64, %g_1: f32, %argmax_1: i64, %g_2: f32, %argmax_2: i64, %g_3: f32, %argmax_3: i64, %unused: f32):
    %sum_0 = arith.constant 0.0 : f32
    %q_h = linalg.index 2 : index
    %r_h = linalg.index 3 : index
    %r_w = linalg.index 4 : index
    %q_w = linalg.index 5 : index
    %position_index = affine.apply affine_map<(qh, rh, qw, rw) -> ((qh * 2 + rh) * 32 + qw * 2 + rw)>(%q_h, %r_h, %q_w, %r_w)
    %position = arith.index_cast %position_index : index to i64
    %hit_0 = arith.cmpi eq, %argmax_0, %position : i64

    %added_0 = arith.addf %sum_0, %g_0 : f32
    %sum_1 = arith.select %hit_0, %added_0, %sum_0 : f32
    %hit_1 = arith.cmpi eq, %argmax_1, %position : i64

    %added_1 = arith.addf %sum_1, %g_1 : f32
    %sum_2 = arith.select %hit_1, %added_1, %sum_1 : f32
    %hit_2 = arith.cmpi eq, %argmax_2, %position : i64

    %added_2 = arith.addf %sum_2, %g_2 : f32
    %sum_3 = arith.select %hit_2, %added_2, %sum_2 : f32
    %hit_3 = arith.cmpi eq, %argmax_3, %position : i64

    %added_3 = arith.addf %sum_3, %g_3 : f32
    %sum_4 = arith.select %hit_3, %added_3, %sum_3 : f32

    linalg.yield %sum_4 : f32
  } -> tensor<16x32x16x2x2x16xf32>
  %tdst = tensor.empty() : tensor<16x32x16x2x16x2xf32>
  %t = linalg.transpose ins(%grid : tensor<16x32x16x2x2x16xf32>) outs(%tdst : tensor<16x32x16x2x16x2xf32>) permutation = [0, 1, 2, 3, 5, 4]
  %grad_in = tensor.collapse_shape %t [[0], [1], [2, 3], [4, 5]] : tensor<16x32x16x2x16x2xf32> into !grad_in
  return %grad_in : !grad_in
}
