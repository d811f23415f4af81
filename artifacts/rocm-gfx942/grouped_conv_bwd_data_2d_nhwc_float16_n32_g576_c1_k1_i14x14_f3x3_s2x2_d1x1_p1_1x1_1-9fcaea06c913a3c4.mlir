// Convolution backward-data (CK examples 17_convnd_bwd_data and 38_grouped_conv_bwd_data_multiple_d),
// 2-D, layout NHWC, 576 group(s), epilogue: none (grad_in = acc).
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
// Problem: grouped_conv_bwd_data_2d_nhwc_float16_n32_g576_c1_k1_i14x14_f3x3_s2x2_d1x1_p1_1x1_1

!grad_out = tensor<32x7x7x576xf16>
!weight = tensor<576x3x3x1xf16>
!grad_in = tensor<32x14x14x576xf16>
!grad_out_cl = tensor<32x7x7x576xf16>
!weight_groups = tensor<576x1x3x3x1xf16>

func.func @grouped_conv_bwd_data_2d_nhwc_float16_n32_g576_c1_k1_i14x14_f3x3_s2x2_d1x1_p1_1x1_1(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f16
  // grad_out is channels-last already
  %grad_out_groups = tensor.expand_shape %grad_out [[0], [1], [2], [3, 4]] output_shape [32, 7, 7, 576, 1] : !grad_out_cl into tensor<32x7x7x576x1xf16>
  %weight_groups = tensor.expand_shape %weight [[0, 1], [2], [3], [4]] output_shape [576, 1, 3, 3, 1] : !weight into !weight_groups

  // The interleaved store (axis 0: 2 slots, axis 1: 2 slots): each phase writes its rows whole into its own slot, a contiguous
  // insert IREE writes in place; one linalg.generic at the end reads every slot once and writes every grad_in
  // position once. A slot holds ceil(size / s) rows per axis; a phase with fewer real rows computes the rest from
  // zeros (or grad_out past its window), and the interleave never reads them.
  %slots_0 = tensor.empty() : tensor<2x2x32x7x7x576xf16>
  // every slot is some phase's
  // Phase 0: taps f = 0 + 2*t (t < 2), 0 + 2*t (t < 2); writes grad_in positions 1 + 2*m (m < 7), 1 + 2*m (m < 7).
  %w_0_empty = tensor.empty() : tensor<576x2x2x1x1xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      outs(%w_0_empty : tensor<576x2x2x1x1xf16>) {
  ^bb0(%unused: f16):
    %g = linalg.index 0 : index
    %u0 = linalg.index 1 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u0)
    %u1 = linalg.index 2 : index
    %f1 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u1)
    %k = linalg.index 3 : index
    %c = linalg.index 4 : index
    %tap = tensor.extract %weight_groups[%g, %k, %f0, %f1, %c] : !weight_groups

    linalg.yield %tap : f16
  } -> tensor<576x2x2x1x1xf16>
  %go_0 = tensor.pad %grad_out_groups low[0, 0, 0, 0, 0] high[0, 1, 1, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero_element : f16
  } : tensor<32x7x7x576x1xf16> to tensor<32x8x8x576x1xf16>
  %acc_0_empty = tensor.empty() : tensor<32x7x7x576x1xf32>
  %acc_0_zero = linalg.fill ins(%zero : f32) outs(%acc_0_empty : tensor<32x7x7x576x1xf32>) -> tensor<32x7x7x576x1xf32>
  // grouped: acc[n, m, g, c] += window[n, m + dilation*u, g, k] * w[g, u, k, c]
  %acc_0 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0 + u0 * 1, m1 + u1 * 1, g, k)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (g, u0, u1, k, c)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%go_0, %w_0 : tensor<32x8x8x576x1xf16>, tensor<576x2x2x1x1xf16>) outs(%acc_0_zero : tensor<32x7x7x576x1xf32>) {
  ^bb0(%x: f16, %w: f16, %a: f32):
    %x_f32 = arith.extf %x : f16 to f32
    %w_f32 = arith.extf %w : f16 to f32
    %product = arith.mulf %x_f32, %w_f32 : f32
    %sum = arith.addf %a, %product : f32
    linalg.yield %sum : f32
  } -> tensor<32x7x7x576x1xf32>

  %store_0_empty = tensor.empty() : tensor<32x7x7x576x1xf16>
  %store_0 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_0 : tensor<32x7x7x576x1xf32>) outs(%store_0_empty : tensor<32x7x7x576x1xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<32x7x7x576x1xf16>
  %stored_0 = tensor.collapse_shape %store_0 [[0], [1], [2], [3, 4]] : tensor<32x7x7x576x1xf16> into tensor<32x7x7x576xf16>
  %slots_1 = tensor.insert_slice %stored_0 into %slots_0[1, 1, 0, 0, 0, 0] [1, 1, 32, 7, 7, 576] [1, 1, 1, 1, 1, 1] : tensor<32x7x7x576xf16> into tensor<2x2x32x7x7x576xf16>
  // Phase 1: taps f = 0 + 2*t (t < 2), 1 + 2*t (t < 1); writes grad_in positions 1 + 2*m (m < 7), 0 + 2*m (m < 7).
  %w_1_empty = tensor.empty() : tensor<576x2x1x1x1xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      outs(%w_1_empty : tensor<576x2x1x1x1xf16>) {
  ^bb0(%unused: f16):
    %g = linalg.index 0 : index
    %u0 = linalg.index 1 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u0)
    %u1 = linalg.index 2 : index
    %f1 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u1)
    %k = linalg.index 3 : index
    %c = linalg.index 4 : index
    %tap = tensor.extract %weight_groups[%g, %k, %f0, %f1, %c] : !weight_groups

    linalg.yield %tap : f16
  } -> tensor<576x2x1x1x1xf16>
  %go_1 = tensor.pad %grad_out_groups low[0, 0, 0, 0, 0] high[0, 1, 0, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero_element : f16
  } : tensor<32x7x7x576x1xf16> to tensor<32x8x7x576x1xf16>
  %acc_1_empty = tensor.empty() : tensor<32x7x7x576x1xf32>
  %acc_1_zero = linalg.fill ins(%zero : f32) outs(%acc_1_empty : tensor<32x7x7x576x1xf32>) -> tensor<32x7x7x576x1xf32>
  // grouped: acc[n, m, g, c] += window[n, m + dilation*u, g, k] * w[g, u, k, c]
  %acc_1 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0 + u0 * 1, m1 + u1 * 1, g, k)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (g, u0, u1, k, c)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%go_1, %w_1 : tensor<32x8x7x576x1xf16>, tensor<576x2x1x1x1xf16>) outs(%acc_1_zero : tensor<32x7x7x576x1xf32>) {
  ^bb0(%x: f16, %w: f16, %a: f32):
    %x_f32 = arith.extf %x : f16 to f32
    %w_f32 = arith.extf %w : f16 to f32
    %product = arith.mulf %x_f32, %w_f32 : f32
    %sum = arith.addf %a, %product : f32
    linalg.yield %sum : f32
  } -> tensor<32x7x7x576x1xf32>

  %store_1_empty = tensor.empty() : tensor<32x7x7x576x1xf16>
  %store_1 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_1 : tensor<32x7x7x576x1xf32>) outs(%store_1_empty : tensor<32x7x7x576x1xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<32x7x7x576x1xf16>
  %stored_1 = tensor.collapse_shape %store_1 [[0], [1], [2], [3, 4]] : tensor<32x7x7x576x1xf16> into tensor<32x7x7x576xf16>
  %slots_2 = tensor.insert_slice %stored_1 into %slots_1[1, 0, 0, 0, 0, 0] [1, 1, 32, 7, 7, 576] [1, 1, 1, 1, 1, 1] : tensor<32x7x7x576xf16> into tensor<2x2x32x7x7x576xf16>
  // Phase 2: taps f = 1 + 2*t (t < 1), 0 + 2*t (t < 2); writes grad_in positions 0 + 2*m (m < 7), 1 + 2*m (m < 7).
  %w_2_empty = tensor.empty() : tensor<576x1x2x1x1xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      outs(%w_2_empty : tensor<576x1x2x1x1xf16>) {
  ^bb0(%unused: f16):
    %g = linalg.index 0 : index
    %u0 = linalg.index 1 : index
    %f0 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u0)
    %u1 = linalg.index 2 : index
    %f1 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u1)
    %k = linalg.index 3 : index
    %c = linalg.index 4 : index
    %tap = tensor.extract %weight_groups[%g, %k, %f0, %f1, %c] : !weight_groups

    linalg.yield %tap : f16
  } -> tensor<576x1x2x1x1xf16>
  %go_2 = tensor.pad %grad_out_groups low[0, 0, 0, 0, 0] high[0, 0, 1, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero_element : f16
  } : tensor<32x7x7x576x1xf16> to tensor<32x7x8x576x1xf16>
  %acc_2_empty = tensor.empty() : tensor<32x7x7x576x1xf32>
  %acc_2_zero = linalg.fill ins(%zero : f32) outs(%acc_2_empty : tensor<32x7x7x576x1xf32>) -> tensor<32x7x7x576x1xf32>
  // grouped: acc[n, m, g, c] += window[n, m + dilation*u, g, k] * w[g, u, k, c]
  %acc_2 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0 + u0 * 1, m1 + u1 * 1, g, k)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (g, u0, u1, k, c)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%go_2, %w_2 : tensor<32x7x8x576x1xf16>, tensor<576x1x2x1x1xf16>) outs(%acc_2_zero : tensor<32x7x7x576x1xf32>) {
  ^bb0(%x: f16, %w: f16, %a: f32):
    %x_f32 = arith.extf %x : f16 to f32
    %w_f32 = arith.extf %w : f16 to f32
    %product = arith.mulf %x_f32, %w_f32 : f32
    %sum = arith.addf %a, %product : f32
    linalg.yield %sum : f32
  } -> tensor<32x7x7x576x1xf32>

  %store_2_empty = tensor.empty() : tensor<32x7x7x576x1xf16>
  %store_2 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_2 : tensor<32x7x7x576x1xf32>) outs(%store_2_empty : tensor<32x7x7x576x1xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<32x7x7x576x1xf16>
  %stored_2 = tensor.collapse_shape %store_2 [[0], [1], [2], [3, 4]] : tensor<32x7x7x576x1xf16> into tensor<32x7x7x576xf16>
  %slots_3 = tensor.insert_slice %stored_2 into %slots_2[0, 1, 0, 0, 0, 0] [1, 1, 32, 7, 7, 576] [1, 1, 1, 1, 1, 1] : tensor<32x7x7x576xf16> into tensor<2x2x32x7x7x576xf16>
  // Phase 3: taps f = 1 + 2*t (t < 1), 1 + 2*t (t < 1); writes grad_in positions 0 + 2*m (m < 7), 0 + 2*m (m < 7).
  %w_3_empty = tensor.empty() : tensor<576x1x1x1x1xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      outs(%w_3_empty : tensor<576x1x1x1x1xf16>) {
  ^bb0(%unused: f16):
    %g = linalg.index 0 : index
    %u0 = linalg.index 1 : index
    %f0 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u0)
    %u1 = linalg.index 2 : index
    %f1 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u1)
    %k = linalg.index 3 : index
    %c = linalg.index 4 : index
    %tap = tensor.extract %weight_groups[%g, %k, %f0, %f1, %c] : !weight_groups

    linalg.yield %tap : f16
  } -> tensor<576x1x1x1x1xf16>

  %acc_3_empty = tensor.empty() : tensor<32x7x7x576x1xf32>
  %acc_3_zero = linalg.fill ins(%zero : f32) outs(%acc_3_empty : tensor<32x7x7x576x1xf32>) -> tensor<32x7x7x576x1xf32>
  // grouped: acc[n, m, g, c] += window[n, m + dilation*u, g, k] * w[g, u, k, c]
  %acc_3 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0 + u0 * 1, m1 + u1 * 1, g, k)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (g, u0, u1, k, c)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%grad_out_groups, %w_3 : tensor<32x7x7x576x1xf16>, tensor<576x1x1x1x1xf16>) outs(%acc_3_zero : tensor<32x7x7x576x1xf32>) {
  ^bb0(%x: f16, %w: f16, %a: f32):
    %x_f32 = arith.extf %x : f16 to f32
    %w_f32 = arith.extf %w : f16 to f32
    %product = arith.mulf %x_f32, %w_f32 : f32
    %sum = arith.addf %a, %product : f32
    linalg.yield %sum : f32
  } -> tensor<32x7x7x576x1xf32>

  %store_3_empty = tensor.empty() : tensor<32x7x7x576x1xf16>
  %store_3 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_3 : tensor<32x7x7x576x1xf32>) outs(%store_3_empty : tensor<32x7x7x576x1xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<32x7x7x576x1xf16>
  %stored_3 = tensor.collapse_shape %store_3 [[0], [1], [2], [3, 4]] : tensor<32x7x7x576x1xf16> into tensor<32x7x7x576xf16>
  %slots_4 = tensor.insert_slice %stored_3 into %slots_3[0, 0, 0, 0, 0, 0] [1, 1, 32, 7, 7, 576] [1, 1, 1, 1, 1, 1] : tensor<32x7x7x576xf16> into tensor<2x2x32x7x7x576xf16>
  // grad_in position i (per strided axis, stride s) is row i floordiv s of slot i mod s: read through the indexing
  // map, with the target's tiling (workgroup tiles of a strided dim are multiples of s); the epilogue and the cast
  // happen here when there is an epilogue (the slots then hold the float32 accumulators)
  %grad_in_interleaved = linalg.generic {indexing_maps = [affine_map<(n, i0, i1, ch) -> (i0 mod 2, i1 mod 2, n, i0 floordiv 2, i1 floordiv 2, ch)>, affine_map<(n, i0, i1, ch) -> (n, i0, i1, ch)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%slots_4 : tensor<2x2x32x7x7x576xf16>) outs(%dst : !grad_in) attrs = {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{thread = [1, 1, 1, 8], workgroup = [1, 1, 2, 576]}>, translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [144, 1, 1] subgroup_size = 64>>} {
  ^bb0(%acc: f16, %unused: f16):

    linalg.yield %acc : f16
  } -> !grad_in
  return %grad_in_interleaved : !grad_in
}
