// Convolution backward-data (CK examples 17_convnd_bwd_data and 38_grouped_conv_bwd_data_multiple_d),
// 2-D, layout NCHW, 1 group(s), epilogue: none (grad_in = acc).
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
// grad_in = f(acc, d0, d1, ...) and the cast to bf16 in the dispatch that computes it, and is inserted
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
// Problem: conv_bwd_data_2d_nchw_bfloat16_n2_g1_c2_k4_i10x7_f3x3_s2x3_d1x2_p2_2x2_1

!grad_out = tensor<2x4x6x2xbf16>
!weight = tensor<4x2x3x3xbf16>
!grad_in = tensor<2x2x10x7xbf16>
!grad_out_cl = tensor<2x6x2x4xbf16>

func.func @conv_bwd_data_2d_nchw_bfloat16_n2_g1_c2_k4_i10x7_f3x3_s2x3_d1x2_p2_2x2_1(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : bf16
  %grad_out_cl_empty = tensor.empty() : !grad_out_cl
  %grad_out_cl = linalg.transpose ins(%grad_out : !grad_out) outs(%grad_out_cl_empty : !grad_out_cl) permutation = [0, 2, 3, 1]
  // one group: the phases read the weight as it is

  // every grad_in position is reached by exactly one phase: no initial value needed
  // Phase 0: taps f = 0 + 2*t (t < 2), 0 + 3*t (t < 1); writes grad_in positions 0 + 2*m (m < 5), 1 + 3*m (m < 2).
  %w_0_empty = tensor.empty() : tensor<2x1x4x2xbf16>
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3, 2 - d0 * 2, 0 - d1 * 3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%weight : !weight) outs(%w_0_empty : tensor<2x1x4x2xbf16>) {
  ^bb0(%tap: bf16, %unused: bf16):
    linalg.yield %tap : bf16
  } -> tensor<2x1x4x2xbf16>
  %go_0_cropped = tensor.extract_slice %grad_out_cl[0, 0, 1, 0] [2, 6, 1, 4] [1, 1, 1, 1] : !grad_out_cl to tensor<2x6x1x4xbf16>
  %go_0 = tensor.pad %go_0_cropped low[0, 0, 0, 0] high[0, 0, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : bf16
  } : tensor<2x6x1x4xbf16> to tensor<2x6x2x4xbf16>
  %acc_0_empty = tensor.empty() : tensor<2x5x2x2xf32>
  %acc_0_zero = linalg.fill ins(%zero : f32) outs(%acc_0_empty : tensor<2x5x2x2xf32>) -> tensor<2x5x2x2xf32>
  %acc_0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_0, %w_0 : tensor<2x6x2x4xbf16>, tensor<2x1x4x2xbf16>) outs(%acc_0_zero : tensor<2x5x2x2xf32>) -> tensor<2x5x2x2xf32>

  %store_0_empty = tensor.empty() : tensor<2x1x2x5x2xbf16>
  %store_0 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0, m1) -> (n, m0, m1, c)>, affine_map<(n, g, c, m0, m1) -> (n, g, c, m0, m1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_0 : tensor<2x5x2x2xf32>) outs(%store_0_empty : tensor<2x1x2x5x2xbf16>) {
  ^bb0(%acc: f32, %unused: bf16):
    %stored = arith.truncf %acc : f32 to bf16
    linalg.yield %stored : bf16
  } -> tensor<2x1x2x5x2xbf16>
  %stored_0 = tensor.collapse_shape %store_0 [[0], [1, 2], [3], [4]] : tensor<2x1x2x5x2xbf16> into tensor<2x2x5x2xbf16>
  %grad_in_1 = tensor.insert_slice %stored_0 into %dst[0, 0, 0, 1] [2, 2, 5, 2] [1, 1, 2, 3] : tensor<2x2x5x2xbf16> into !grad_in
  // Phase 1: taps f = 0 + 2*t (t < 2), 1 + 3*t (t < 1); writes grad_in positions 0 + 2*m (m < 5), 0 + 3*m (m < 3).
  %w_1_empty = tensor.empty() : tensor<2x1x4x2xbf16>
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3, 2 - d0 * 2, 1 - d1 * 3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%weight : !weight) outs(%w_1_empty : tensor<2x1x4x2xbf16>) {
  ^bb0(%tap: bf16, %unused: bf16):
    linalg.yield %tap : bf16
  } -> tensor<2x1x4x2xbf16>
  %go_1 = tensor.pad %grad_out_cl low[0, 0, 0, 0] high[0, 0, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : bf16
  } : !grad_out_cl to tensor<2x6x3x4xbf16>
  %acc_1_empty = tensor.empty() : tensor<2x5x3x2xf32>
  %acc_1_zero = linalg.fill ins(%zero : f32) outs(%acc_1_empty : tensor<2x5x3x2xf32>) -> tensor<2x5x3x2xf32>
  %acc_1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_1, %w_1 : tensor<2x6x3x4xbf16>, tensor<2x1x4x2xbf16>) outs(%acc_1_zero : tensor<2x5x3x2xf32>) -> tensor<2x5x3x2xf32>

  %store_1_empty = tensor.empty() : tensor<2x1x2x5x3xbf16>
  %store_1 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0, m1) -> (n, m0, m1, c)>, affine_map<(n, g, c, m0, m1) -> (n, g, c, m0, m1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_1 : tensor<2x5x3x2xf32>) outs(%store_1_empty : tensor<2x1x2x5x3xbf16>) {
  ^bb0(%acc: f32, %unused: bf16):
    %stored = arith.truncf %acc : f32 to bf16
    linalg.yield %stored : bf16
  } -> tensor<2x1x2x5x3xbf16>
  %stored_1 = tensor.collapse_shape %store_1 [[0], [1, 2], [3], [4]] : tensor<2x1x2x5x3xbf16> into tensor<2x2x5x3xbf16>
  %grad_in_2 = tensor.insert_slice %stored_1 into %grad_in_1[0, 0, 0, 0] [2, 2, 5, 3] [1, 1, 2, 3] : tensor<2x2x5x3xbf16> into !grad_in
  // Phase 2: taps f = 0 + 2*t (t < 2), 2 + 3*t (t < 1); writes grad_in positions 0 + 2*m (m < 5), 2 + 3*m (m < 2).
  %w_2_empty = tensor.empty() : tensor<2x1x4x2xbf16>
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3, 2 - d0 * 2, 2 - d1 * 3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%weight : !weight) outs(%w_2_empty : tensor<2x1x4x2xbf16>) {
  ^bb0(%tap: bf16, %unused: bf16):
    linalg.yield %tap : bf16
  } -> tensor<2x1x4x2xbf16>

  %acc_2_empty = tensor.empty() : tensor<2x5x2x2xf32>
  %acc_2_zero = linalg.fill ins(%zero : f32) outs(%acc_2_empty : tensor<2x5x2x2xf32>) -> tensor<2x5x2x2xf32>
  %acc_2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%grad_out_cl, %w_2 : tensor<2x6x2x4xbf16>, tensor<2x1x4x2xbf16>) outs(%acc_2_zero : tensor<2x5x2x2xf32>) -> tensor<2x5x2x2xf32>

  %store_2_empty = tensor.empty() : tensor<2x1x2x5x2xbf16>
  %store_2 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0, m1) -> (n, m0, m1, c)>, affine_map<(n, g, c, m0, m1) -> (n, g, c, m0, m1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_2 : tensor<2x5x2x2xf32>) outs(%store_2_empty : tensor<2x1x2x5x2xbf16>) {
  ^bb0(%acc: f32, %unused: bf16):
    %stored = arith.truncf %acc : f32 to bf16
    linalg.yield %stored : bf16
  } -> tensor<2x1x2x5x2xbf16>
  %stored_2 = tensor.collapse_shape %store_2 [[0], [1, 2], [3], [4]] : tensor<2x1x2x5x2xbf16> into tensor<2x2x5x2xbf16>
  %grad_in_3 = tensor.insert_slice %stored_2 into %grad_in_2[0, 0, 0, 2] [2, 2, 5, 2] [1, 1, 2, 3] : tensor<2x2x5x2xbf16> into !grad_in
  // Phase 3: taps f = 1 + 2*t (t < 1), 0 + 3*t (t < 1); writes grad_in positions 1 + 2*m (m < 5), 1 + 3*m (m < 2).
  %w_3_empty = tensor.empty() : tensor<1x1x4x2xbf16>
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3, 1 - d0 * 2, 0 - d1 * 3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%weight : !weight) outs(%w_3_empty : tensor<1x1x4x2xbf16>) {
  ^bb0(%tap: bf16, %unused: bf16):
    linalg.yield %tap : bf16
  } -> tensor<1x1x4x2xbf16>
  %go_3_cropped = tensor.extract_slice %grad_out_cl[0, 1, 1, 0] [2, 5, 1, 4] [1, 1, 1, 1] : !grad_out_cl to tensor<2x5x1x4xbf16>
  %go_3 = tensor.pad %go_3_cropped low[0, 0, 0, 0] high[0, 0, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : bf16
  } : tensor<2x5x1x4xbf16> to tensor<2x5x2x4xbf16>
  %acc_3_empty = tensor.empty() : tensor<2x5x2x2xf32>
  %acc_3_zero = linalg.fill ins(%zero : f32) outs(%acc_3_empty : tensor<2x5x2x2xf32>) -> tensor<2x5x2x2xf32>
  %acc_3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_3, %w_3 : tensor<2x5x2x4xbf16>, tensor<1x1x4x2xbf16>) outs(%acc_3_zero : tensor<2x5x2x2xf32>) -> tensor<2x5x2x2xf32>

  %store_3_empty = tensor.empty() : tensor<2x1x2x5x2xbf16>
  %store_3 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0, m1) -> (n, m0, m1, c)>, affine_map<(n, g, c, m0, m1) -> (n, g, c, m0, m1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_3 : tensor<2x5x2x2xf32>) outs(%store_3_empty : tensor<2x1x2x5x2xbf16>) {
  ^bb0(%acc: f32, %unused: bf16):
    %stored = arith.truncf %acc : f32 to bf16
    linalg.yield %stored : bf16
  } -> tensor<2x1x2x5x2xbf16>
  %stored_3 = tensor.collapse_shape %store_3 [[0], [1, 2], [3], [4]] : tensor<2x1x2x5x2xbf16> into tensor<2x2x5x2xbf16>
  %grad_in_4 = tensor.insert_slice %stored_3 into %grad_in_3[0, 0, 1, 1] [2, 2, 5, 2] [1, 1, 2, 3] : tensor<2x2x5x2xbf16> into !grad_in
  // Phase 4: taps f = 1 + 2*t (t < 1), 1 + 3*t (t < 1); writes grad_in positions 1 + 2*m (m < 5), 0 + 3*m (m < 3).
  %w_4_empty = tensor.empty() : tensor<1x1x4x2xbf16>
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_4 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3, 1 - d0 * 2, 1 - d1 * 3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%weight : !weight) outs(%w_4_empty : tensor<1x1x4x2xbf16>) {
  ^bb0(%tap: bf16, %unused: bf16):
    linalg.yield %tap : bf16
  } -> tensor<1x1x4x2xbf16>
  %go_4_cropped = tensor.extract_slice %grad_out_cl[0, 1, 0, 0] [2, 5, 2, 4] [1, 1, 1, 1] : !grad_out_cl to tensor<2x5x2x4xbf16>
  %go_4 = tensor.pad %go_4_cropped low[0, 0, 0, 0] high[0, 0, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : bf16
  } : tensor<2x5x2x4xbf16> to tensor<2x5x3x4xbf16>
  %acc_4_empty = tensor.empty() : tensor<2x5x3x2xf32>
  %acc_4_zero = linalg.fill ins(%zero : f32) outs(%acc_4_empty : tensor<2x5x3x2xf32>) -> tensor<2x5x3x2xf32>
  %acc_4 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_4, %w_4 : tensor<2x5x3x4xbf16>, tensor<1x1x4x2xbf16>) outs(%acc_4_zero : tensor<2x5x3x2xf32>) -> tensor<2x5x3x2xf32>

  %store_4_empty = tensor.empty() : tensor<2x1x2x5x3xbf16>
  %store_4 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0, m1) -> (n, m0, m1, c)>, affine_map<(n, g, c, m0, m1) -> (n, g, c, m0, m1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_4 : tensor<2x5x3x2xf32>) outs(%store_4_empty : tensor<2x1x2x5x3xbf16>) {
  ^bb0(%acc: f32, %unused: bf16):
    %stored = arith.truncf %acc : f32 to bf16
    linalg.yield %stored : bf16
  } -> tensor<2x1x2x5x3xbf16>
  %stored_4 = tensor.collapse_shape %store_4 [[0], [1, 2], [3], [4]] : tensor<2x1x2x5x3xbf16> into tensor<2x2x5x3xbf16>
  %grad_in_5 = tensor.insert_slice %stored_4 into %grad_in_4[0, 0, 1, 0] [2, 2, 5, 3] [1, 1, 2, 3] : tensor<2x2x5x3xbf16> into !grad_in
  // Phase 5: taps f = 1 + 2*t (t < 1), 2 + 3*t (t < 1); writes grad_in positions 1 + 2*m (m < 5), 2 + 3*m (m < 2).
  %w_5_empty = tensor.empty() : tensor<1x1x4x2xbf16>
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_5 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3, 1 - d0 * 2, 2 - d1 * 3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%weight : !weight) outs(%w_5_empty : tensor<1x1x4x2xbf16>) {
  ^bb0(%tap: bf16, %unused: bf16):
    linalg.yield %tap : bf16
  } -> tensor<1x1x4x2xbf16>
  %go_5_cropped = tensor.extract_slice %grad_out_cl[0, 1, 0, 0] [2, 5, 2, 4] [1, 1, 1, 1] : !grad_out_cl to tensor<2x5x2x4xbf16>
  %acc_5_empty = tensor.empty() : tensor<2x5x2x2xf32>
  %acc_5_zero = linalg.fill ins(%zero : f32) outs(%acc_5_empty : tensor<2x5x2x2xf32>) -> tensor<2x5x2x2xf32>
  %acc_5 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_5_cropped, %w_5 : tensor<2x5x2x4xbf16>, tensor<1x1x4x2xbf16>) outs(%acc_5_zero : tensor<2x5x2x2xf32>) -> tensor<2x5x2x2xf32>

  %store_5_empty = tensor.empty() : tensor<2x1x2x5x2xbf16>
  %store_5 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0, m1) -> (n, m0, m1, c)>, affine_map<(n, g, c, m0, m1) -> (n, g, c, m0, m1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_5 : tensor<2x5x2x2xf32>) outs(%store_5_empty : tensor<2x1x2x5x2xbf16>) {
  ^bb0(%acc: f32, %unused: bf16):
    %stored = arith.truncf %acc : f32 to bf16
    linalg.yield %stored : bf16
  } -> tensor<2x1x2x5x2xbf16>
  %stored_5 = tensor.collapse_shape %store_5 [[0], [1, 2], [3], [4]] : tensor<2x1x2x5x2xbf16> into tensor<2x2x5x2xbf16>
  %grad_in_6 = tensor.insert_slice %stored_5 into %grad_in_5[0, 0, 1, 2] [2, 2, 5, 2] [1, 1, 2, 3] : tensor<2x2x5x2xbf16> into !grad_in
  return %grad_in_6 : !grad_in
}
