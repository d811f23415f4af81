// Convolution backward-data (CK examples 17_convnd_bwd_data and 38_grouped_conv_bwd_data_multiple_d),
// 1-D, layout NCW, 3 group(s), epilogue: acc + d0.
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
// Problem: grouped_conv_bwd_data_1d_ncw_float16_n1_g3_c5_k4_i11_f2_s2_d1_p0_1_e1_ab50a28575

!grad_out = tensor<1x12x6xf16>
!weight = tensor<12x5x2xf16>
!grad_in = tensor<1x15x11xf16>
!grad_out_cl = tensor<1x6x12xf16>
!d0 = tensor<1x15x11xf16>
!weight_groups = tensor<3x4x5x2xf16>

func.func @grouped_conv_bwd_data_1d_ncw_float16_n1_g3_c5_k4_i11_f2_s2_d1_p0_1_e1_ab50a28575(%grad_out: !grad_out, %weight: !weight, %d0: !d0, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f16
  %grad_out_cl_empty = tensor.empty() : !grad_out_cl
  %grad_out_cl = linalg.transpose ins(%grad_out : !grad_out) outs(%grad_out_cl_empty : !grad_out_cl) permutation = [0, 2, 1]
  %grad_out_groups = tensor.expand_shape %grad_out_cl [[0], [1], [2, 3]] output_shape [1, 6, 3, 4] : !grad_out_cl into tensor<1x6x3x4xf16>
  %weight_groups = tensor.expand_shape %weight [[0, 1], [2], [3]] output_shape [3, 4, 5, 2] : !weight into !weight_groups
  %d0_kept = tensor.collapse_shape %d0 [[0, 1], [2]] : !d0 into tensor<15x11xf16>
  %d0_split = tensor.expand_shape %d0_kept [[0, 1], [2]] output_shape [3, 5, 11] : tensor<15x11xf16> into tensor<3x5x11xf16>
  // every grad_in position is reached by exactly one phase: no initial value needed
  // Phase 0: taps f = 0 + 2*t (t < 1); writes grad_in positions 0 + 2*m (m < 6).
  %w_0_empty = tensor.empty() : tensor<3x1x4x5xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_0_empty : tensor<3x1x4x5xf16>) {
  ^bb0(%unused: f16):
    %g = linalg.index 0 : index
    %u0 = linalg.index 1 : index
    %f0 = affine.apply affine_map<(u) -> (0 - u * 2)>(%u0)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight_groups[%g, %k, %c, %f0] : !weight_groups

    linalg.yield %tap : f16
  } -> tensor<3x1x4x5xf16>

  %acc_0_empty = tensor.empty() : tensor<1x6x3x5xf32>
  %acc_0_zero = linalg.fill ins(%zero : f32) outs(%acc_0_empty : tensor<1x6x3x5xf32>) -> tensor<1x6x3x5xf32>
  // grouped: acc[n, m, g, c] += window[n, m + dilation*u, g, k] * w[g, u, k, c]
  %acc_0 = linalg.generic {indexing_maps = [affine_map<(n, m0, g, c, u0, k) -> (n, m0 + u0 * 1, g, k)>, affine_map<(n, m0, g, c, u0, k) -> (g, u0, k, c)>, affine_map<(n, m0, g, c, u0, k) -> (n, m0, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%grad_out_groups, %w_0 : tensor<1x6x3x4xf16>, tensor<3x1x4x5xf16>) outs(%acc_0_zero : tensor<1x6x3x5xf32>) {
  ^bb0(%x: f16, %w: f16, %a: f32):
    %x_f32 = arith.extf %x : f16 to f32
    %w_f32 = arith.extf %w : f16 to f32
    %product = arith.mulf %x_f32, %w_f32 : f32
    %sum = arith.addf %a, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x6x3x5xf32>
  %d0_phase_0 = tensor.extract_slice %d0_split[0, 0, 0] [3, 5, 6] [1, 1, 2] : tensor<3x5x11xf16> to tensor<3x5x6xf16>
  %store_0_empty = tensor.empty() : tensor<1x3x5x6xf16>
  %store_0 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0) -> (n, m0, g, c)>, affine_map<(n, g, c, m0) -> (g, c, m0)>, affine_map<(n, g, c, m0) -> (n, g, c, m0)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_0, %d0_phase_0 : tensor<1x6x3x5xf32>, tensor<3x5x6xf16>) outs(%store_0_empty : tensor<1x3x5x6xf16>) {
  ^bb0(%acc: f32, %d0_value: f16, %unused: f16):
    %d0_f32 = arith.extf %d0_value : f16 to f32
    %e0 = arith.addf %acc, %d0_f32 : f32
    %stored = arith.truncf %e0 : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<1x3x5x6xf16>
  %stored_0 = tensor.collapse_shape %store_0 [[0], [1, 2], [3]] : tensor<1x3x5x6xf16> into tensor<1x15x6xf16>
  %grad_in_1 = tensor.insert_slice %stored_0 into %dst[0, 0, 0] [1, 15, 6] [1, 1, 2] : tensor<1x15x6xf16> into !grad_in
  // Phase 1: taps f = 1 + 2*t (t < 1); writes grad_in positions 1 + 2*m (m < 5).
  %w_1_empty = tensor.empty() : tensor<3x1x4x5xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_1_empty : tensor<3x1x4x5xf16>) {
  ^bb0(%unused: f16):
    %g = linalg.index 0 : index
    %u0 = linalg.index 1 : index
    %f0 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u0)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight_groups[%g, %k, %c, %f0] : !weight_groups

    linalg.yield %tap : f16
  } -> tensor<3x1x4x5xf16>
  %go_1_cropped = tensor.extract_slice %grad_out_groups[0, 0, 0, 0] [1, 5, 3, 4] [1, 1, 1, 1] : tensor<1x6x3x4xf16> to tensor<1x5x3x4xf16>
  %acc_1_empty = tensor.empty() : tensor<1x5x3x5xf32>
  %acc_1_zero = linalg.fill ins(%zero : f32) outs(%acc_1_empty : tensor<1x5x3x5xf32>) -> tensor<1x5x3x5xf32>
  // grouped: acc[n, m, g, c] += window[n, m + dilation*u, g, k] * w[g, u, k, c]
  %acc_1 = linalg.generic {indexing_maps = [affine_map<(n, m0, g, c, u0, k) -> (n, m0 + u0 * 1, g, k)>, affine_map<(n, m0, g, c, u0, k) -> (g, u0, k, c)>, affine_map<(n, m0, g, c, u0, k) -> (n, m0, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%go_1_cropped, %w_1 : tensor<1x5x3x4xf16>, tensor<3x1x4x5xf16>) outs(%acc_1_zero : tensor<1x5x3x5xf32>) {
  ^bb0(%x: f16, %w: f16, %a: f32):
    %x_f32 = arith.extf %x : f16 to f32
    %w_f32 = arith.extf %w : f16 to f32
    %product = arith.mulf %x_f32, %w_f32 : f32
    %sum = arith.addf %a, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x5x3x5xf32>
  %d0_phase_1 = tensor.extract_slice %d0_split[0, 0, 1] [3, 5, 5] [1, 1, 2] : tensor<3x5x11xf16> to tensor<3x5x5xf16>
  %store_1_empty = tensor.empty() : tensor<1x3x5x5xf16>
  %store_1 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0) -> (n, m0, g, c)>, affine_map<(n, g, c, m0) -> (g, c, m0)>, affine_map<(n, g, c, m0) -> (n, g, c, m0)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_1, %d0_phase_1 : tensor<1x5x3x5xf32>, tensor<3x5x5xf16>) outs(%store_1_empty : tensor<1x3x5x5xf16>) {
  ^bb0(%acc: f32, %d0_value: f16, %unused: f16):
    %d0_f32 = arith.extf %d0_value : f16 to f32
    %e0 = arith.addf %acc, %d0_f32 : f32
    %stored = arith.truncf %e0 : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<1x3x5x5xf16>
  %stored_1 = tensor.collapse_shape %store_1 [[0], [1, 2], [3]] : tensor<1x3x5x5xf16> into tensor<1x15x5xf16>
  %grad_in_2 = tensor.insert_slice %stored_1 into %grad_in_1[0, 0, 1] [1, 15, 5] [1, 1, 2] : tensor<1x15x5xf16> into !grad_in
  return %grad_in_2 : !grad_in
}
