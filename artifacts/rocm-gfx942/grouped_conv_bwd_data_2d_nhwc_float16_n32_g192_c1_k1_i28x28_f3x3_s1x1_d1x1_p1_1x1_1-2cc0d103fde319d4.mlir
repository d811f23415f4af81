// Convolution backward-data (CK examples 17_convnd_bwd_data and 38_grouped_conv_bwd_data_multiple_d),
// 2-D, layout NHWC, 192 group(s), epilogue: none (grad_in = acc).
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
// Problem: grouped_conv_bwd_data_2d_nhwc_float16_n32_g192_c1_k1_i28x28_f3x3_s1x1_d1x1_p1_1x1_1

!grad_out = tensor<32x28x28x192xf16>
!weight = tensor<192x3x3x1xf16>
!grad_in = tensor<32x28x28x192xf16>
!grad_out_cl = tensor<32x28x28x192xf16>
!weight_groups = tensor<192x1x3x3x1xf16>

func.func @grouped_conv_bwd_data_2d_nhwc_float16_n32_g192_c1_k1_i28x28_f3x3_s1x1_d1x1_p1_1x1_1(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f16
  // grad_out is channels-last already
  %grad_out_groups = tensor.expand_shape %grad_out [[0], [1], [2], [3, 4]] output_shape [32, 28, 28, 192, 1] : !grad_out_cl into tensor<32x28x28x192x1xf16>
  %weight_groups = tensor.expand_shape %weight [[0, 1], [2], [3], [4]] output_shape [192, 1, 3, 3, 1] : !weight into !weight_groups

  // every grad_in position is reached by exactly one phase: no initial value needed
  // Phase 0: taps f = 0 + 1*t (t < 3), 0 + 1*t (t < 3); writes grad_in positions 0 + 1*m (m < 28), 0 + 1*m (m < 28).
  %w_0_empty = tensor.empty() : tensor<192x3x3x1x1xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      outs(%w_0_empty : tensor<192x3x3x1x1xf16>) {
  ^bb0(%unused: f16):
    %g = linalg.index 0 : index
    %u0 = linalg.index 1 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u * 1)>(%u0)
    %u1 = linalg.index 2 : index
    %f1 = affine.apply affine_map<(u) -> (2 - u * 1)>(%u1)
    %k = linalg.index 3 : index
    %c = linalg.index 4 : index
    %tap = tensor.extract %weight_groups[%g, %k, %f0, %f1, %c] : !weight_groups

    linalg.yield %tap : f16
  } -> tensor<192x3x3x1x1xf16>
  %go_0 = tensor.pad %grad_out_groups low[0, 1, 1, 0, 0] high[0, 1, 1, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero_element : f16
  } : tensor<32x28x28x192x1xf16> to tensor<32x30x30x192x1xf16>
  %acc_0_empty = tensor.empty() : tensor<32x28x28x192x1xf32>
  %acc_0_zero = linalg.fill ins(%zero : f32) outs(%acc_0_empty : tensor<32x28x28x192x1xf32>) -> tensor<32x28x28x192x1xf32>
  // grouped: acc[n, m, g, c] += window[n, m + dilation*u, g, k] * w[g, u, k, c]
  %acc_0 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0 + u0 * 1, m1 + u1 * 1, g, k)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (g, u0, u1, k, c)>, affine_map<(n, m0, m1, g, c, u0, u1, k) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%go_0, %w_0 : tensor<32x30x30x192x1xf16>, tensor<192x3x3x1x1xf16>) outs(%acc_0_zero : tensor<32x28x28x192x1xf32>) {
  ^bb0(%x: f16, %w: f16, %a: f32):
    %x_f32 = arith.extf %x : f16 to f32
    %w_f32 = arith.extf %w : f16 to f32
    %product = arith.mulf %x_f32, %w_f32 : f32
    %sum = arith.addf %a, %product : f32
    linalg.yield %sum : f32
  } -> tensor<32x28x28x192x1xf32>

  %store_0_empty = tensor.empty() : tensor<32x28x28x192x1xf16>
  %store_0 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_0 : tensor<32x28x28x192x1xf32>) outs(%store_0_empty : tensor<32x28x28x192x1xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<32x28x28x192x1xf16>
  %stored_0 = tensor.collapse_shape %store_0 [[0], [1], [2], [3, 4]] : tensor<32x28x28x192x1xf16> into tensor<32x28x28x192xf16>
  %grad_in_1 = tensor.insert_slice %stored_0 into %dst[0, 0, 0, 0] [32, 28, 28, 192] [1, 1, 1, 1] : tensor<32x28x28x192xf16> into !grad_in
  return %grad_in_1 : !grad_in
}
