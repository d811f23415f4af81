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
// Problem: conv_bwd_data_2d_nhwc_float16_n32_g1_c1024_k256_i14x14_f1x1_s1x1_d1x1_p0_0x0_0

!grad_out = tensor<32x14x14x256xf16>
!weight = tensor<256x1x1x1024xf16>
!grad_in = tensor<32x14x14x1024xf16>
!grad_out_cl = tensor<32x14x14x256xf16>

func.func @conv_bwd_data_2d_nhwc_float16_n32_g1_c1024_k256_i14x14_f1x1_s1x1_d1x1_p0_0x0_0(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f16
  // grad_out is channels-last already
  // one group: the phases read the weight as it is

  // every grad_in position is reached by exactly one phase: no initial value needed
  // Phase 0: taps f = 0 + 1*t (t < 1), 0 + 1*t (t < 1); writes grad_in positions 0 + 1*m (m < 14), 0 + 1*m (m < 14).
  %w_0_empty = tensor.empty() : tensor<1x1x256x1024xf16>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_0_empty : tensor<1x1x256x1024xf16>) {
  ^bb0(%unused: f16):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (0 - u * 1)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (0 - u * 1)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight

    linalg.yield %tap : f16
  } -> tensor<1x1x256x1024xf16>

  %acc_0_empty = tensor.empty() : tensor<32x14x14x1024xf32>
  %acc_0_zero = linalg.fill ins(%zero : f32) outs(%acc_0_empty : tensor<32x14x14x1024xf32>) -> tensor<32x14x14x1024xf32>
  %acc_0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%grad_out, %w_0 : tensor<32x14x14x256xf16>, tensor<1x1x256x1024xf16>) outs(%acc_0_zero : tensor<32x14x14x1024xf32>) -> tensor<32x14x14x1024xf32>

  %store_0_empty = tensor.empty() : tensor<32x14x14x1x1024xf16>
  %store_0 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_0 : tensor<32x14x14x1024xf32>) outs(%store_0_empty : tensor<32x14x14x1x1024xf16>) {
  ^bb0(%acc: f32, %unused: f16):
    %stored = arith.truncf %acc : f32 to f16
    linalg.yield %stored : f16
  } -> tensor<32x14x14x1x1024xf16>
  %stored_0 = tensor.collapse_shape %store_0 [[0], [1], [2], [3, 4]] : tensor<32x14x14x1x1024xf16> into tensor<32x14x14x1024xf16>
  %grad_in_1 = tensor.insert_slice %stored_0 into %dst[0, 0, 0, 0] [32, 14, 14, 1024] [1, 1, 1, 1] : tensor<32x14x14x1024xf16> into !grad_in
  return %grad_in_1 : !grad_in
}
