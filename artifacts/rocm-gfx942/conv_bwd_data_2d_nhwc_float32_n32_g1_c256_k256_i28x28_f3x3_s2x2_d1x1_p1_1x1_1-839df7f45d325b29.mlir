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
// grad_in = f(acc, d0, d1, ...) and the cast to f32 in the dispatch that computes it, and is inserted
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
// Problem: conv_bwd_data_2d_nhwc_float32_n32_g1_c256_k256_i28x28_f3x3_s2x2_d1x1_p1_1x1_1

!grad_out = tensor<32x14x14x256xf32>
!weight = tensor<256x3x3x256xf32>
!grad_in = tensor<32x28x28x256xf32>
!grad_out_cl = tensor<32x14x14x256xf32>

func.func @conv_bwd_data_2d_nhwc_float32_n32_g1_c256_k256_i28x28_f3x3_s2x2_d1x1_p1_1x1_1(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f32
  // grad_out is channels-last already
  // one group: the phases read the weight as it is

  // every grad_in position is reached by exactly one phase: no initial value needed
  // Phase 0: taps f = 0 + 2*t (t < 2), 0 + 2*t (t < 2); writes grad_in positions 1 + 2*m (m < 14), 1 + 2*m (m < 14).
  %w_0_empty = tensor.empty() : tensor<2x2x256x256xf32>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_0_empty : tensor<2x2x256x256xf32>) {
  ^bb0(%unused: f32):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight

    linalg.yield %tap : f32
  } -> tensor<2x2x256x256xf32>
  %go_0 = tensor.pad %grad_out low[0, 0, 0, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : f32
  } : !grad_out_cl to tensor<32x15x15x256xf32>
  %acc_0_empty = tensor.empty() : tensor<32x14x14x256xf32>
  %acc_0_zero = linalg.fill ins(%zero : f32) outs(%acc_0_empty : tensor<32x14x14x256xf32>) -> tensor<32x14x14x256xf32>
  %acc_0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_0, %w_0 : tensor<32x15x15x256xf32>, tensor<2x2x256x256xf32>) outs(%acc_0_zero : tensor<32x14x14x256xf32>) -> tensor<32x14x14x256xf32>

  %store_0_empty = tensor.empty() : tensor<32x14x14x1x256xf32>
  %store_0 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_0 : tensor<32x14x14x256xf32>) outs(%store_0_empty : tensor<32x14x14x1x256xf32>) {
  ^bb0(%acc: f32, %unused: f32):

    linalg.yield %acc : f32
  } -> tensor<32x14x14x1x256xf32>
  %stored_0 = tensor.collapse_shape %store_0 [[0], [1], [2], [3, 4]] : tensor<32x14x14x1x256xf32> into tensor<32x14x14x256xf32>
  %grad_in_1 = tensor.insert_slice %stored_0 into %dst[0, 1, 1, 0] [32, 14, 14, 256] [1, 2, 2, 1] : tensor<32x14x14x256xf32> into !grad_in
  // Phase 1: taps f = 0 + 2*t (t < 2), 1 + 2*t (t < 1); writes grad_in positions 1 + 2*m (m < 14), 0 + 2*m (m < 14).
  %w_1_empty = tensor.empty() : tensor<2x1x256x256xf32>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_1_empty : tensor<2x1x256x256xf32>) {
  ^bb0(%unused: f32):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight

    linalg.yield %tap : f32
  } -> tensor<2x1x256x256xf32>
  %go_1 = tensor.pad %grad_out low[0, 0, 0, 0] high[0, 1, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : f32
  } : !grad_out_cl to tensor<32x15x14x256xf32>
  %acc_1_empty = tensor.empty() : tensor<32x14x14x256xf32>
  %acc_1_zero = linalg.fill ins(%zero : f32) outs(%acc_1_empty : tensor<32x14x14x256xf32>) -> tensor<32x14x14x256xf32>
  %acc_1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_1, %w_1 : tensor<32x15x14x256xf32>, tensor<2x1x256x256xf32>) outs(%acc_1_zero : tensor<32x14x14x256xf32>) -> tensor<32x14x14x256xf32>

  %store_1_empty = tensor.empty() : tensor<32x14x14x1x256xf32>
  %store_1 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_1 : tensor<32x14x14x256xf32>) outs(%store_1_empty : tensor<32x14x14x1x256xf32>) {
  ^bb0(%acc: f32, %unused: f32):

    linalg.yield %acc : f32
  } -> tensor<32x14x14x1x256xf32>
  %stored_1 = tensor.collapse_shape %store_1 [[0], [1], [2], [3, 4]] : tensor<32x14x14x1x256xf32> into tensor<32x14x14x256xf32>
  %grad_in_2 = tensor.insert_slice %stored_1 into %grad_in_1[0, 1, 0, 0] [32, 14, 14, 256] [1, 2, 2, 1] : tensor<32x14x14x256xf32> into !grad_in
  // Phase 2: taps f = 1 + 2*t (t < 1), 0 + 2*t (t < 2); writes grad_in positions 0 + 2*m (m < 14), 1 + 2*m (m < 14).
  %w_2_empty = tensor.empty() : tensor<1x2x256x256xf32>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_2_empty : tensor<1x2x256x256xf32>) {
  ^bb0(%unused: f32):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight

    linalg.yield %tap : f32
  } -> tensor<1x2x256x256xf32>
  %go_2 = tensor.pad %grad_out low[0, 0, 0, 0] high[0, 0, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : f32
  } : !grad_out_cl to tensor<32x14x15x256xf32>
  %acc_2_empty = tensor.empty() : tensor<32x14x14x256xf32>
  %acc_2_zero = linalg.fill ins(%zero : f32) outs(%acc_2_empty : tensor<32x14x14x256xf32>) -> tensor<32x14x14x256xf32>
  %acc_2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%go_2, %w_2 : tensor<32x14x15x256xf32>, tensor<1x2x256x256xf32>) outs(%acc_2_zero : tensor<32x14x14x256xf32>) -> tensor<32x14x14x256xf32>

  %store_2_empty = tensor.empty() : tensor<32x14x14x1x256xf32>
  %store_2 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_2 : tensor<32x14x14x256xf32>) outs(%store_2_empty : tensor<32x14x14x1x256xf32>) {
  ^bb0(%acc: f32, %unused: f32):

    linalg.yield %acc : f32
  } -> tensor<32x14x14x1x256xf32>
  %stored_2 = tensor.collapse_shape %store_2 [[0], [1], [2], [3, 4]] : tensor<32x14x14x1x256xf32> into tensor<32x14x14x256xf32>
  %grad_in_3 = tensor.insert_slice %stored_2 into %grad_in_2[0, 0, 1, 0] [32, 14, 14, 256] [1, 2, 2, 1] : tensor<32x14x14x256xf32> into !grad_in
  // Phase 3: taps f = 1 + 2*t (t < 1), 1 + 2*t (t < 1); writes grad_in positions 0 + 2*m (m < 14), 0 + 2*m (m < 14).
  %w_3_empty = tensor.empty() : tensor<1x1x256x256xf32>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_3_empty : tensor<1x1x256x256xf32>) {
  ^bb0(%unused: f32):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (1 - u * 2)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight

    linalg.yield %tap : f32
  } -> tensor<1x1x256x256xf32>

  %acc_3_empty = tensor.empty() : tensor<32x14x14x256xf32>
  %acc_3_zero = linalg.fill ins(%zero : f32) outs(%acc_3_empty : tensor<32x14x14x256xf32>) -> tensor<32x14x14x256xf32>
  %acc_3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%grad_out, %w_3 : tensor<32x14x14x256xf32>, tensor<1x1x256x256xf32>) outs(%acc_3_zero : tensor<32x14x14x256xf32>) -> tensor<32x14x14x256xf32>

  %store_3_empty = tensor.empty() : tensor<32x14x14x1x256xf32>
  %store_3 = linalg.generic {indexing_maps = [affine_map<(n, m0, m1, g, c) -> (n, m0, m1, c)>, affine_map<(n, m0, m1, g, c) -> (n, m0, m1, g, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_3 : tensor<32x14x14x256xf32>) outs(%store_3_empty : tensor<32x14x14x1x256xf32>) {
  ^bb0(%acc: f32, %unused: f32):

    linalg.yield %acc : f32
  } -> tensor<32x14x14x1x256xf32>
  %stored_3 = tensor.collapse_shape %store_3 [[0], [1], [2], [3, 4]] : tensor<32x14x14x1x256xf32> into tensor<32x14x14x256xf32>
  %grad_in_4 = tensor.insert_slice %stored_3 into %grad_in_3[0, 0, 0, 0] [32, 14, 14, 256] [1, 2, 2, 1] : tensor<32x14x14x256xf32> into !grad_in
  return %grad_in_4 : !grad_in
}
