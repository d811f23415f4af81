// resnext2d's max-pooling backward (16 x 32 x 32 x 32, 3 x 3 / 2, NCHW, int64 indices) as shipped, its workspace and
// destination arguments removed, the grid's last axis whole and each candidate read through w floordiv 2.
// iree-benchmark-module on 2 workers (--input=16x32x16x16xf32=1 --input=16x32x16x16xi64=0): 0.81-1.05 ms against the
// shipped grid's 0.43-0.45 (0.81-0.92 with --iree-llvmcpu-experimental-vectorize-to-transfer-gather).

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
  %dst = tensor.empty() : !grad_in
  %grid_dst = tensor.expand_shape %dst [[0], [1], [2, 3], [4]] output_shape [16, 32, 16, 2, 32] : !grad_in into tensor<16x32x16x2x32xf32>
  %grid = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4 floordiv 2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4 floordiv 2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4 floordiv 2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4 floordiv 2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4 floordiv 2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4 floordiv 2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4 floordiv 2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4 floordiv 2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%windows_g_0, %windows_argmax_0, %windows_g_1, %windows_argmax_1, %windows_g_2, %windows_argmax_2, %windows_g_3, %windows_argmax_3 : !slot_g, tensor<16x32x16x16xi64>, !slot_g, tensor<16x32x16x16xi64>, !slot_g, tensor<16x32x16x16xi64>, !slot_g, tensor<16x32x16x16xi64>) outs(%grid_dst : tensor<16x32x16x2x32xf32>) {
  ^bb0(%g_0: f32, %argmax_0: i64, %g_1: f32, %argmax_1: i64, %g_2: f32, %argmax_2: i64, %g_3: f32, %argmax_3: i64, %unused: f32):
    %sum_0 = arith.constant 0.0 : f32
    %q_h = linalg.index 2 : index
    %r_h = linalg.index 3 : index
    %w = linalg.index 4 : index
    %position_index = affine.apply affine_map<(qh, rh, w) -> ((qh * 2 + rh) * 32 + w)>(%q_h, %r_h, %w)
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
  } -> tensor<16x32x16x2x32xf32>
  %grad_in = tensor.collapse_shape %grid [[0], [1], [2, 3], [4]] : tensor<16x32x16x2x32xf32> into !grad_in
  return %grad_in : !grad_in
}
