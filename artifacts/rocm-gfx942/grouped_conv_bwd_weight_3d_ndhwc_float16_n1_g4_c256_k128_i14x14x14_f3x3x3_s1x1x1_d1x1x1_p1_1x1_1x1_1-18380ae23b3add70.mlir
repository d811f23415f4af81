// Grouped convolution backward-weight (CK example 20_grouped_conv_bwd_weight), 3-D, layout NDHWC.
//
// The forward convolution, per spatial axis (s stride, d dilation, p_lo low padding), group g:
//     out[n, o, g*K + k] = sum_{f, c} x[n, i, g*C + c] * w[g*K + k, f, c]      where   s*o + d*f = i + p_lo
// Its gradient with respect to w is the same identity read as a sum over what the weight does not index,
// the batch n and the output positions o:
//     grad_w[g*K + k, f, c] = sum_{n, o} x_padded[n, s*o + d*f, g*C + c] * grad_out[n, o, g*K + k]
// where x_padded is x with p_lo zeros in front (i + p_lo = s*o + d*f) and, behind, as many zeros as the last
// window reads (taps outside x multiply a zero), or x cut where the last window ends: exactly what is read. That is a convolution with the roles swapped (JAX's
// transpose_rhs: stride and dilation trade places): grad_out is the filter, its taps o dilated by s; x is the
// image; f runs over the output positions with stride d; and the batch n is reduced like the input channels
// of a forward convolution. As an implicit GEMM per group: K rows, F*C columns, a reduction of length N*O
// (x must stay the first operand: IREE's implicit GEMM takes it as the image). No index map has a negative
// coefficient (s*o + d*f >= 0).
//
// Groups fold into channels as in PyTorch and CK's NHWGC: tensor.expand_shape splits G*C and G*K into
// (G, C) and (G, K) (free reshapes).
//
// The batch splits into 1 chunks of 1 (the same free reshape, N = J*Nc): the weight
// gradient is small and its reduction long (here 2744 terms per element), so one dispatch
// computes J partial sums in parallel and a second adds them:
//     partial[j, g, k, f, c] = sum_{nc, o} x_padded[j*Nc + nc, s*o + d*f, g, c] * grad_out[j*Nc + nc, o, g, k]
//     grad_w[g*K + k, f, c]  = sum_j partial[j, g, k, f, c]
// (J = 1: no split, no J dim and no sum.) One linalg.generic over (g, k, f0, f1, f2, c, n, o0, o1, o2) accumulates float32 into
// !partial = (G, K, F0, F1, F2, C); tensor.collapse_shape merges (G, K); the sum over J casts to f16.
//
// Problem: grouped_conv_bwd_weight_3d_ndhwc_float16_n1_g4_c256_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1

!x = tensor<1x14x14x14x1024xf16>
!grad_out = tensor<1x14x14x14x512xf16>
!grad_w = tensor<512x3x3x3x256xf16>
!x_padded = tensor<1x16x16x16x1024xf16>
!x_groups = tensor<1x16x16x16x4x256xf16>
!grad_out_groups = tensor<1x14x14x14x4x128xf16>
!partial = tensor<4x128x3x3x3x256xf32>
!partial_flat = tensor<512x3x3x3x256xf32>
!acc_flat = tensor<512x3x3x3x256xf32>

func.func @grouped_conv_bwd_weight_3d_ndhwc_float16_n1_g4_c256_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1(%x: !x, %grad_out: !grad_out, %dst: !grad_w {iree.abi.output = 0 : index}) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f16
  %x_unpadded_groups = tensor.expand_shape %x [[0], [1], [2], [3], [4, 5]] output_shape [1, 14, 14, 14, 4, 256] : !x into tensor<1x14x14x14x4x256xf16>
  %x_groups = tensor.pad %x_unpadded_groups low[0, 1, 1, 1, 0, 0] high[0, 1, 1, 1, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index, %i5: index):
    tensor.yield %zero_element : f16
  } : tensor<1x14x14x14x4x256xf16> to !x_groups
  // x_groups is x padded, above
  %grad_out_groups = tensor.expand_shape %grad_out [[0], [1], [2], [3], [4, 5]] output_shape [1, 14, 14, 14, 4, 128] : !grad_out into !grad_out_groups
  %partial_empty = tensor.empty() : !partial
  %partial_zero = linalg.fill ins(%zero : f32) outs(%partial_empty : !partial) -> !partial
  // partial[j, g, k, f, c] += x_padded[j, nc, s*o + d*f, g, c] * grad_out[j, nc, o, g, k], per axis
  // (channels-first: the same sums)
  %partial = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d6, d7 + d2, d8 + d3, d9 + d4, d0, d5)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d6, d7, d8, d9, d0, d1)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d0, d1, d2, d3, d4, d5)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]}
      ins(%x_groups, %grad_out_groups : !x_groups, !grad_out_groups) outs(%partial_zero : !partial) {
  ^bb0(%xv: f16, %gv: f16, %sum: f32):
    %x32 = arith.extf %xv : f16 to f32
    %g32 = arith.extf %gv : f16 to f32
    %product = arith.mulf %x32, %g32 : f32
    %new_sum = arith.addf %sum, %product : f32
    linalg.yield %new_sum : f32
  } -> !partial
  %partial_flat = tensor.collapse_shape %partial [[0, 1], [2], [3], [4], [5]] : !partial into !partial_flat
  // one chunk: the partial sum is grad_w's float32 value
  %grad_w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%partial_flat : !acc_flat) outs(%dst : !grad_w) {
  ^bb0(%a: f32, %unused: f16):
    %v = arith.truncf %a : f32 to f16
    linalg.yield %v : f16
  } -> !grad_w
  return %grad_w : !grad_w
}
