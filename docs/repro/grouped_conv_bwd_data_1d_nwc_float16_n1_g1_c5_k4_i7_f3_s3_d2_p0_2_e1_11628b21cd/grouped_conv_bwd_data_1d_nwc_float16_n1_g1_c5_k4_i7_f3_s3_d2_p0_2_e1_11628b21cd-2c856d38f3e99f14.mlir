// Convolution backward-data (CK examples 17_convnd_bwd_data and 38_grouped_conv_bwd_data_multiple_d),
// 1-D, layout NWC, 1 group(s), epilogue: acc + d0.
//
// The forward convolution, per spatial axis (s stride, d dilation, p_lo low padding), per group g:
//     out[n, o, g, k] = sum_{f, c} in[n, i, g, c] * w[g, k, f, c]      where   s*o + d*f = i + p_lo
// Backward-data is that identity read from the input side: every input position i sums
// grad_out[n, o, g, k] * w[g, k, f, c] over the (o, f, k) that land on it.
//
// Stride phases (CK's YTilde = s / gcd(s, d)): the taps f = f0 + (s/g)*t of phase f0 land exactly on
// the input positions i = s*m + r - p_lo, where d*f0 = r + s*q, with o = m - q - (d/g)*t. So phase f0 is a
// stride-1 convolution, dilation d/g, of the zero-padded output gradient with its taps flipped (u = T-1-t):
//     acc[n, m, g, c] = sum_{u, k} grad_out_padded[n, m' + (d/g)*u, g, k] * w_phase[g, u, k, c]
// No multiply-add touches an inserted zero. Each phase's accumulator (float32) goes through the epilogue
// grad_in = f(acc, d0, d1, ...) and the cast to f16 in the dispatch that computes it, and is inserted
// with stride s into grad_in: every position is written once, by the phase that reaches it. Positions no
// phase reaches get f(0, d0, ...) (zero without an epilogue). Stride 1 has a single phase: the padded
// output gradient convolved with the flipped filter.
//
// The interleaved store (the GPU targets, channels-last, stride > 1): IREE 3.13 makes each strided insert a
// copy dispatch at a tenth of copy bandwidth (IREE issue 23976). Instead each phase writes its rows whole into
// its own slot of a phase-major tensor, slots[i mod s][n, i floordiv s, c] (a contiguous insert IREE writes in
// place; the float32 accumulator when there is an epilogue, else the cast value), and one linalg.generic
// interleaves the slots into grad_in, through the epilogue: each grad_in position is written once, each slot
// read once. Residues no phase reaches read a zero slot, so they get f(0, d0, ...) too.
//
// Each phase's filter is gathered from the weight (flip and transpose) by a small linalg.generic: indexing
// maps stay free of negative coefficients, which llvm-cpu's tiling cannot take.
//
// Problem: grouped_conv_bwd_data_1d_nwc_float16_n1_g1_c5_k4_i7_f3_s3_d2_p0_2_e1_11628b21cd

!grad_out = tensor<1x2x4xf16>
!weight = tensor<4x3x5xf16>
!grad_in = tensor<1x7x5xf16>
!grad_out_cl = tensor<1x2x4xf16>
!d0 = tensor<1x7x5xf16>

func.func @grouped_conv_bwd_data_1d_nwc_float16_n1_g1_c5_k4_i7_f3_s3_d2_p0_2_e1_11628b21cd(%grad_out: !grad_out, %weight: !weight, %d0: !d0, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f16
  // grad_out is channels-last already
  // one group: the phases read the weight as it is
  %d0_kept = tensor.collapse_shape %d0 [[0, 1], [2]] : !d0 into tensor<7x5xf16>
  %d0_split = tensor.expand_shape %d0_kept [[0], [1, 2]] output_shape [7, 1, 5] : tensor<7x5xf16> into tensor<7x1x5xf16>
  // every grad_in position is reached by exactly one phase: no initial value needed
  // Phase 0: taps f = 0 + 3*t (t < 1); writes grad_in positions 0 + 3*m (m < 3).
  %w_0_empty = tensor.empty() : tensor<1x4x5xf16>
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, 0 - d0 * 3, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%weight : !weight) outs(%w_0_empty : tensor<1x4x5xf16>) {
  ^bb0(%tap: f16, %unused: f16):
    linalg.yield %tap : f16
  } -> tensor<1x4x5xf16>
  %go_0 = tensor.pad %grad_out low[0, 0, 0] high[0, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index):
    tensor.yield %zero_element : f16
  } : !grad_out_cl to tensor<1x3x4xf16>
  %acc_0_empty = tensor.empty() : tensor<1x3x5xf32>
  %acc_0_zero = linalg.fill ins(%zero : f32) outs(%acc_0_empty : tensor<1x3x5xf32>) -> tensor<1x3x5xf32>
  %acc_0 = linalg.conv_1d_nwc_wcf {dilations = dense<[2]> : tensor<1xi64>, strides = dense<[1]> : tensor<1xi64>}
      ins(%go_0, %w_0 : tensor<1x3x4xf16>, tensor<1x4x5xf16>) outs(%acc_0_zero : tensor<1x3x5xf32>) -> tensor<1x3x5xf32>

  %store_0_empty = tensor.empty() : tensor<1x3x1x5xf16>
  %store_0 = linalg.generic {indexing_maps = [affine_map<(n, m0, g, c) -> (n, m0, c)>, affine_map<(n, m0, g, c) -> (m0 * 3, g, c)>, affine_map<(n, m0, g, c) -> (n, m0, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_0, %d0_split : tensor<1x3x5xf32>, tensor<7x1x5xf16>) outs(%store_0_empty : tensor<1x3x1x5xf16>) {
  ^bb0(%acc: f32, %d0_value: f16, %unused: f16):
    %d0_f32 = arith.extf %d0_value : f16 to f32
    %e0 = arith.addf %acc, %d0_f32 : f32
    %stored = arith.truncf %e0 : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<1x3x1x5xf16>
  %stored_0 = tensor.collapse_shape %store_0 [[0], [1], [2, 3]] : tensor<1x3x1x5xf16> into tensor<1x3x5xf16>
  %grad_in_1 = tensor.insert_slice %stored_0 into %dst[0, 0, 0] [1, 3, 5] [1, 3, 1] : tensor<1x3x5xf16> into !grad_in
  // Phase 1: taps f = 1 + 3*t (t < 1); writes grad_in positions 2 + 3*m (m < 2).
  %w_1_empty = tensor.empty() : tensor<1x4x5xf16>
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, 1 - d0 * 3, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%weight : !weight) outs(%w_1_empty : tensor<1x4x5xf16>) {
  ^bb0(%tap: f16, %unused: f16):
    linalg.yield %tap : f16
  } -> tensor<1x4x5xf16>

  %acc_1_empty = tensor.empty() : tensor<1x2x5xf32>
  %acc_1_zero = linalg.fill ins(%zero : f32) outs(%acc_1_empty : tensor<1x2x5xf32>) -> tensor<1x2x5xf32>
  %acc_1 = linalg.conv_1d_nwc_wcf {dilations = dense<[2]> : tensor<1xi64>, strides = dense<[1]> : tensor<1xi64>}
      ins(%grad_out, %w_1 : tensor<1x2x4xf16>, tensor<1x4x5xf16>) outs(%acc_1_zero : tensor<1x2x5xf32>) -> tensor<1x2x5xf32>

  %store_1_empty = tensor.empty() : tensor<1x2x1x5xf16>
  %store_1 = linalg.generic {indexing_maps = [affine_map<(n, m0, g, c) -> (n, m0, c)>, affine_map<(n, m0, g, c) -> (m0 * 3 + 2, g, c)>, affine_map<(n, m0, g, c) -> (n, m0, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_1, %d0_split : tensor<1x2x5xf32>, tensor<7x1x5xf16>) outs(%store_1_empty : tensor<1x2x1x5xf16>) {
  ^bb0(%acc: f32, %d0_value: f16, %unused: f16):
    %d0_f32 = arith.extf %d0_value : f16 to f32
    %e0 = arith.addf %acc, %d0_f32 : f32
    %stored = arith.truncf %e0 : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<1x2x1x5xf16>
  %stored_1 = tensor.collapse_shape %store_1 [[0], [1], [2, 3]] : tensor<1x2x1x5xf16> into tensor<1x2x5xf16>
  %grad_in_2 = tensor.insert_slice %stored_1 into %grad_in_1[0, 2, 0] [1, 2, 5] [1, 3, 1] : tensor<1x2x5xf16> into !grad_in
  // Phase 2: taps f = 2 + 3*t (t < 1); writes grad_in positions 1 + 3*m (m < 2).
  %w_2_empty = tensor.empty() : tensor<1x4x5xf16>
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, 2 - d0 * 3, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%weight : !weight) outs(%w_2_empty : tensor<1x4x5xf16>) {
  ^bb0(%tap: f16, %unused: f16):
    linalg.yield %tap : f16
  } -> tensor<1x4x5xf16>
  %go_2_cropped = tensor.extract_slice %grad_out[0, 0, 0] [1, 1, 4] [1, 1, 1] : !grad_out_cl to tensor<1x1x4xf16>
  %go_2 = tensor.pad %go_2_cropped low[0, 1, 0] high[0, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index):
    tensor.yield %zero_element : f16
  } : tensor<1x1x4xf16> to tensor<1x2x4xf16>
  %acc_2_empty = tensor.empty() : tensor<1x2x5xf32>
  %acc_2_zero = linalg.fill ins(%zero : f32) outs(%acc_2_empty : tensor<1x2x5xf32>) -> tensor<1x2x5xf32>
  %acc_2 = linalg.conv_1d_nwc_wcf {dilations = dense<[2]> : tensor<1xi64>, strides = dense<[1]> : tensor<1xi64>}
      ins(%go_2, %w_2 : tensor<1x2x4xf16>, tensor<1x4x5xf16>) outs(%acc_2_zero : tensor<1x2x5xf32>) -> tensor<1x2x5xf32>

  %store_2_empty = tensor.empty() : tensor<1x2x1x5xf16>
  %store_2 = linalg.generic {indexing_maps = [affine_map<(n, m0, g, c) -> (n, m0, c)>, affine_map<(n, m0, g, c) -> (m0 * 3 + 1, g, c)>, affine_map<(n, m0, g, c) -> (n, m0, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_2, %d0_split : tensor<1x2x5xf32>, tensor<7x1x5xf16>) outs(%store_2_empty : tensor<1x2x1x5xf16>) {
  ^bb0(%acc: f32, %d0_value: f16, %unused: f16):
    %d0_f32 = arith.extf %d0_value : f16 to f32
    %e0 = arith.addf %acc, %d0_f32 : f32
    %stored = arith.truncf %e0 : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<1x2x1x5xf16>
  %stored_2 = tensor.collapse_shape %store_2 [[0], [1], [2, 3]] : tensor<1x2x1x5xf16> into tensor<1x2x5xf16>
  %grad_in_3 = tensor.insert_slice %stored_2 into %grad_in_2[0, 1, 0] [1, 2, 5] [1, 3, 1] : tensor<1x2x5xf16> into !grad_in
  return %grad_in_3 : !grad_in
}
