// Convolution backward-data (CK examples 17_convnd_bwd_data and 38_grouped_conv_bwd_data_multiple_d),
// 2-D, layout NHWC, 1 group(s), epilogue: none (grad_in = acc).
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
// Problem: conv_bwd_data_2d_nhwc_float16_n128_g1_c256_k256_i71x71_f3x3_s2x2_d1x1_p1_1x1_1

!grad_out = tensor<128x36x36x256xf16>
!weight = tensor<256x3x3x256xf16>
!grad_in = tensor<128x71x71x256xf16>
!grad_out_cl = tensor<128x36x36x256xf16>

func.func @conv_bwd_data_2d_nhwc_float16_n128_g1_c256_k256_i71x71_f3x3_s2x2_d1x1_p1_1x1_1(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f16
  // grad_out is channels-last already
  // one group: the phases read the weight as it is

  // The interleaved store (axis 0: 2 slots, axis 1: 2 slots): each phase writes its rows whole into its own slot, a contiguous
  // insert IREE writes in place; one linalg.generic at the end reads every slot once and writes every grad_in
  // position once. A slot holds ceil(size / s) rows per axis; a phase with fewer real rows computes the rest from
  // zeros (or grad_out past its window), and the interleave never reads them.
  %slots_0 = tensor.empty() : tensor<2x2x128x36x36x256xf16>
  // every slot is some phase's
  // Phase 0: taps f = 0 + 2*t (t < 2), 0 + 2*t (t < 2); writes grad_in positions 1 + 2*m (m < 36), 1 + 2*m (m < 36).
  %w_0_empty = tensor.empty() : tensor<2x2x256x256xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_0_empty : tensor<2x2x256x256xf16>) {
  ^bb0(%unused: f16):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight

    linalg.yield %tap : f16
  } -> tensor<2x2x256x256xf16>
  %go_0 = tensor.pad %grad_out low[0, 0, 0, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : f16
  } : !grad_out_cl to tensor<128x37x37x256xf16>
  %acc_0_empty = tensor.empty() : tensor<128x36x36x256xf32>
  %acc_0_zero = linalg.fill ins(%zero : f32) outs(%acc_0_empty : tensor<128x36x36x256xf32>) -> tensor<128x36x36x256xf32>
  %acc_0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_0, %w_0 : tensor<128x37x37x256xf16>, tensor<2x2x256x256xf16>) outs(%acc_0_zero : tensor<128x36x36x256xf32>) -> tensor<128x36x36x256xf32>

  %store_0_empty = tensor.empty() : tensor<128x36x36x1x256xf16>
  %store_0 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_0 : tensor<128x36x36x256xf32>) outs(%store_0_empty : tensor<128x36x36x1x256xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<128x36x36x1x256xf16>
  %stored_0 = tensor.collapse_shape %store_0 [[0], [1], [2], [3, 4]] : tensor<128x36x36x1x256xf16> into tensor<128x36x36x256xf16>
  %slots_1 = tensor.insert_slice %stored_0 into %slots_0[1, 1, 0, 0, 0, 0] [1, 1, 128, 36, 36, 256] [1, 1, 1, 1, 1, 1] : tensor<128x36x36x256xf16> into tensor<2x2x128x36x36x256xf16>
  // Phase 1: taps f = 0 + 2*t (t < 2), 1 + 2*t (t < 1); writes grad_in positions 1 + 2*m (m < 36), 0 + 2*m (m < 36).
  %w_1_empty = tensor.empty() : tensor<2x1x256x256xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_1_empty : tensor<2x1x256x256xf16>) {
  ^bb0(%unused: f16):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight

    linalg.yield %tap : f16
  } -> tensor<2x1x256x256xf16>
  %go_1 = tensor.pad %grad_out low[0, 0, 0, 0] high[0, 1, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : f16
  } : !grad_out_cl to tensor<128x37x36x256xf16>
  %acc_1_empty = tensor.empty() : tensor<128x36x36x256xf32>
  %acc_1_zero = linalg.fill ins(%zero : f32) outs(%acc_1_empty : tensor<128x36x36x256xf32>) -> tensor<128x36x36x256xf32>
  %acc_1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_1, %w_1 : tensor<128x37x36x256xf16>, tensor<2x1x256x256xf16>) outs(%acc_1_zero : tensor<128x36x36x256xf32>) -> tensor<128x36x36x256xf32>

  %store_1_empty = tensor.empty() : tensor<128x36x36x1x256xf16>
  %store_1 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_1 : tensor<128x36x36x256xf32>) outs(%store_1_empty : tensor<128x36x36x1x256xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<128x36x36x1x256xf16>
  %stored_1 = tensor.collapse_shape %store_1 [[0], [1], [2], [3, 4]] : tensor<128x36x36x1x256xf16> into tensor<128x36x36x256xf16>
  %slots_2 = tensor.insert_slice %stored_1 into %slots_1[1, 0, 0, 0, 0, 0] [1, 1, 128, 36, 36, 256] [1, 1, 1, 1, 1, 1] : tensor<128x36x36x256xf16> into tensor<2x2x128x36x36x256xf16>
  // Phase 2: taps f = 1 + 2*t (t < 1), 0 + 2*t (t < 2); writes grad_in positions 0 + 2*m (m < 36), 1 + 2*m (m < 36).
  %w_2_empty = tensor.empty() : tensor<1x2x256x256xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_2_empty : tensor<1x2x256x256xf16>) {
  ^bb0(%unused: f16):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight

    linalg.yield %tap : f16
  } -> tensor<1x2x256x256xf16>
  %go_2 = tensor.pad %grad_out low[0, 0, 0, 0] high[0, 0, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : f16
  } : !grad_out_cl to tensor<128x36x37x256xf16>
  %acc_2_empty = tensor.empty() : tensor<128x36x36x256xf32>
  %acc_2_zero = linalg.fill ins(%zero : f32) outs(%acc_2_empty : tensor<128x36x36x256xf32>) -> tensor<128x36x36x256xf32>
  %acc_2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_2, %w_2 : tensor<128x36x37x256xf16>, tensor<1x2x256x256xf16>) outs(%acc_2_zero : tensor<128x36x36x256xf32>) -> tensor<128x36x36x256xf32>

  %store_2_empty = tensor.empty() : tensor<128x36x36x1x256xf16>
  %store_2 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_2 : tensor<128x36x36x256xf32>) outs(%store_2_empty : tensor<128x36x36x1x256xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<128x36x36x1x256xf16>
  %stored_2 = tensor.collapse_shape %store_2 [[0], [1], [2], [3, 4]] : tensor<128x36x36x1x256xf16> into tensor<128x36x36x256xf16>
  %slots_3 = tensor.insert_slice %stored_2 into %slots_2[0, 1, 0, 0, 0, 0] [1, 1, 128, 36, 36, 256] [1, 1, 1, 1, 1, 1] : tensor<128x36x36x256xf16> into tensor<2x2x128x36x36x256xf16>
  // Phase 3: taps f = 1 + 2*t (t < 1), 1 + 2*t (t < 1); writes grad_in positions 0 + 2*m (m < 36), 0 + 2*m (m < 36).
  %w_3_empty = tensor.empty() : tensor<1x1x256x256xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_3_empty : tensor<1x1x256x256xf16>) {
  ^bb0(%unused: f16):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight

    linalg.yield %tap : f16
  } -> tensor<1x1x256x256xf16>

  %acc_3_empty = tensor.empty() : tensor<128x36x36x256xf32>
  %acc_3_zero = linalg.fill ins(%zero : f32) outs(%acc_3_empty : tensor<128x36x36x256xf32>) -> tensor<128x36x36x256xf32>
  %acc_3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%grad_out, %w_3 : tensor<128x36x36x256xf16>, tensor<1x1x256x256xf16>) outs(%acc_3_zero : tensor<128x36x36x256xf32>) -> tensor<128x36x36x256xf32>

  %store_3_empty = tensor.empty() : tensor<128x36x36x1x256xf16>
  %store_3 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_3 : tensor<128x36x36x256xf32>) outs(%store_3_empty : tensor<128x36x36x1x256xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<128x36x36x1x256xf16>
  %stored_3 = tensor.collapse_shape %store_3 [[0], [1], [2], [3, 4]] : tensor<128x36x36x1x256xf16> into tensor<128x36x36x256xf16>
  %slots_4 = tensor.insert_slice %stored_3 into %slots_3[0, 0, 0, 0, 0, 0] [1, 1, 128, 36, 36, 256] [1, 1, 1, 1, 1, 1] : tensor<128x36x36x256xf16> into tensor<2x2x128x36x36x256xf16>
  // grad_in position i (per strided axis, stride s) is row i floordiv s of slot i mod s: read through the indexing
  // map, with the target's tiling (workgroup tiles of a strided dim are multiples of s); the epilogue and the cast
  // happen here when there is an epilogue (the slots then hold the float32 accumulators)
  %grad_in_interleaved = linalg.generic {indexing_maps = [affine_map<(n, i0, i1, ch) -> (i0 mod 2, i1 mod 2, n, i0 floordiv 2, i1 floordiv 2, ch)>, affine_map<(n, i0, i1, ch) -> (n, i0, i1, ch)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%slots_4 : tensor<2x2x128x36x36x256xf16>) outs(%dst : !grad_in) attrs = {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{thread = [1, 1, 1, 8], workgroup = [1, 1, 8, 256]}>, translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [256, 1, 1] subgroup_size = 64>>} {
  ^bb0(%acc: f16, %unused: f16):

    linalg.yield %acc : f16
  } -> !grad_in
  return %grad_in_interleaved : !grad_in
}
