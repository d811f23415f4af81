// Hand-edited from the taps form (docs/perf/cpu-step/sixth/hand_variants.txt): x padded to 18 x 18 and deinterleaved into
// its 2 x 2 stride planes (%x_planes), each tap a contiguous slice of one plane; the comments below are the taps form's.
// Grouped convolution backward-weight (CK example 20_grouped_conv_bwd_weight), 2-D, layout NCHW.
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
// The batch splits into 1 chunks of 16 (the same free reshape, N = J*Nc): the weight
// gradient is small and its reduction long (here 1024 terms per element), so one dispatch
// computes J partial sums in parallel and a second adds them:
//     partial[j, g, k, f, c] = sum_{nc, o} x_padded[j*Nc + nc, s*o + d*f, g, c] * grad_out[j*Nc + nc, o, g, k]
//     grad_w[g*K + k, f, c]  = sum_j partial[j, g, k, f, c]
// (J = 1: no split, no J dim and no sum.) One linalg.generic over (g, k, c, f0, f1, n, o0, o1) accumulates float32 into
// !partial = (G, K, C, F0, F1); tensor.collapse_shape merges (G, K); the sum over J casts to f32.
//
// Problem: grouped_conv_bwd_weight_2d_nchw_float32_n16_g8_c8_k8_i16x16_f3x3_s2x2_d1x1_p1_1x1_1

!x = tensor<16x64x16x16xf32>
!grad_out = tensor<16x64x8x8xf32>
!grad_w = tensor<64x8x3x3xf32>
!x_padded = tensor<16x64x18x18xf32>
!x_groups = tensor<16x8x8x18x18xf32>
!grad_out_groups = tensor<16x8x8x8x8xf32>
!partial = tensor<8x8x8x3x3xf32>
!partial_flat = tensor<64x8x3x3xf32>
!acc_flat = tensor<64x8x3x3xf32>

func.func @grouped_conv_bwd_weight_2d_nchw_float32_n16_g8_c8_k8_i16x16_f3x3_s2x2_d1x1_p1_1x1_1(%x: !x, %grad_out: !grad_out, %dst: !grad_w {iree.abi.output = 0 : index}// caller (ops/runtime.py) passes one workspace, kept and reused across calls, of at least the size IREE reports in
// the function's reflection (iree.abi.transients.size.constant): without it each call's intermediates (the gathered
// taps: hundreds of MB on the CK problems) would be fresh pages, faulted in on every call.
, %transients: !hal.buffer {iree.abi.transients}) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f32
  %x_padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : f32
  } : !x to !x_padded
  %x_groups = tensor.expand_shape %x_padded [[0], [1, 2], [3], [4]] output_shape [16, 8, 8, 18, 18] : !x_padded into !x_groups
  %grad_out_groups = tensor.expand_shape %grad_out [[0], [1, 2], [3], [4]] output_shape [16, 8, 8, 8, 8] : !grad_out into !grad_out_groups
  // With a few channels a group the matmul forms' matrices are a few rows wide. Here one generic reads each row of
  // grad_out once and x's rows at every tap (a strided slice per tap: s*o + d*f), and keeps one float32 sum per tap,
  // reducing the output positions, the last one contiguous in every operand (IREE's CPU backend vectorizes along it):
  //     per_tap[f][n, g, k, c] = sum_o grad_out[n, g, k, o] * x_padded[n, g, c, s*o + d*f]      (9 taps)
  // then one generic sums the images and puts each tap's sums in place:
  //     grad_w[g, k, c, f] = sum_n per_tap[f][n, g, k, c]
  %x_split = tensor.expand_shape %x_groups [[0], [1], [2], [3, 4], [5, 6]] output_shape [16, 8, 8, 9, 2, 9, 2] : !x_groups into tensor<16x8x8x9x2x9x2xf32>
  %x_planes_empty = tensor.empty() : tensor<16x8x8x2x2x9x9xf32>
  %x_planes = linalg.transpose ins(%x_split : tensor<16x8x8x9x2x9x2xf32>) outs(%x_planes_empty : tensor<16x8x8x2x2x9x9xf32>) permutation = [0, 1, 2, 4, 6, 3, 5]
  %x_tap_0 = tensor.extract_slice %x_planes[0, 0, 0, 0, 0, 0, 0] [16, 8, 8, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<16x8x8x2x2x9x9xf32> to tensor<16x8x8x8x8xf32>
  %x_tap_1 = tensor.extract_slice %x_planes[0, 0, 0, 0, 1, 0, 0] [16, 8, 8, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<16x8x8x2x2x9x9xf32> to tensor<16x8x8x8x8xf32>
  %x_tap_2 = tensor.extract_slice %x_planes[0, 0, 0, 0, 0, 0, 1] [16, 8, 8, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<16x8x8x2x2x9x9xf32> to tensor<16x8x8x8x8xf32>
  %x_tap_3 = tensor.extract_slice %x_planes[0, 0, 0, 1, 0, 0, 0] [16, 8, 8, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<16x8x8x2x2x9x9xf32> to tensor<16x8x8x8x8xf32>
  %x_tap_4 = tensor.extract_slice %x_planes[0, 0, 0, 1, 1, 0, 0] [16, 8, 8, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<16x8x8x2x2x9x9xf32> to tensor<16x8x8x8x8xf32>
  %x_tap_5 = tensor.extract_slice %x_planes[0, 0, 0, 1, 0, 0, 1] [16, 8, 8, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<16x8x8x2x2x9x9xf32> to tensor<16x8x8x8x8xf32>
  %x_tap_6 = tensor.extract_slice %x_planes[0, 0, 0, 0, 0, 1, 0] [16, 8, 8, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<16x8x8x2x2x9x9xf32> to tensor<16x8x8x8x8xf32>
  %x_tap_7 = tensor.extract_slice %x_planes[0, 0, 0, 0, 1, 1, 0] [16, 8, 8, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<16x8x8x2x2x9x9xf32> to tensor<16x8x8x8x8xf32>
  %x_tap_8 = tensor.extract_slice %x_planes[0, 0, 0, 0, 0, 1, 1] [16, 8, 8, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<16x8x8x2x2x9x9xf32> to tensor<16x8x8x8x8xf32>
  %per_tap_empty = tensor.empty() : tensor<16x8x8x8xf32>
  %per_tap_zero = linalg.fill ins(%zero : f32) outs(%per_tap_empty : tensor<16x8x8x8xf32>) -> tensor<16x8x8x8xf32>
  %per_tap:9 = linalg.generic {indexing_maps = [affine_map<(n, g, k, c, o0, o1) -> (n, g, k, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, c, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, c, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, c, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, c, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, c, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, c, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, c, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, c, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, c, o0, o1)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, k, c)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, k, c)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, k, c)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, k, c)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, k, c)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, k, c)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, k, c)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, k, c)>, affine_map<(n, g, k, c, o0, o1) -> (n, g, k, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%grad_out_groups, %x_tap_0, %x_tap_1, %x_tap_2, %x_tap_3, %x_tap_4, %x_tap_5, %x_tap_6, %x_tap_7, %x_tap_8 : !grad_out_groups, tensor<16x8x8x8x8xf32>, tensor<16x8x8x8x8xf32>, tensor<16x8x8x8x8xf32>, tensor<16x8x8x8x8xf32>, tensor<16x8x8x8x8xf32>, tensor<16x8x8x8x8xf32>, tensor<16x8x8x8x8xf32>, tensor<16x8x8x8x8xf32>, tensor<16x8x8x8x8xf32>) outs(%per_tap_zero, %per_tap_zero, %per_tap_zero, %per_tap_zero, %per_tap_zero, %per_tap_zero, %per_tap_zero, %per_tap_zero, %per_tap_zero : tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>) {
  ^bb0(%gv: f32, %x0: f32, %x1: f32, %x2: f32, %x3: f32, %x4: f32, %x5: f32, %x6: f32, %x7: f32, %x8: f32, %sum0: f32, %sum1: f32, %sum2: f32, %sum3: f32, %sum4: f32, %sum5: f32, %sum6: f32, %sum7: f32, %sum8: f32):
    %product0 = arith.mulf %gv, %x0 : f32
    %sum0_next = arith.addf %sum0, %product0 : f32
    %product1 = arith.mulf %gv, %x1 : f32
    %sum1_next = arith.addf %sum1, %product1 : f32
    %product2 = arith.mulf %gv, %x2 : f32
    %sum2_next = arith.addf %sum2, %product2 : f32
    %product3 = arith.mulf %gv, %x3 : f32
    %sum3_next = arith.addf %sum3, %product3 : f32
    %product4 = arith.mulf %gv, %x4 : f32
    %sum4_next = arith.addf %sum4, %product4 : f32
    %product5 = arith.mulf %gv, %x5 : f32
    %sum5_next = arith.addf %sum5, %product5 : f32
    %product6 = arith.mulf %gv, %x6 : f32
    %sum6_next = arith.addf %sum6, %product6 : f32
    %product7 = arith.mulf %gv, %x7 : f32
    %sum7_next = arith.addf %sum7, %product7 : f32
    %product8 = arith.mulf %gv, %x8 : f32
    %sum8_next = arith.addf %sum8, %product8 : f32
    linalg.yield %sum0_next, %sum1_next, %sum2_next, %sum3_next, %sum4_next, %sum5_next, %sum6_next, %sum7_next, %sum8_next : f32, f32, f32, f32, f32, f32, f32, f32, f32
  } -> (tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>)
  %acc_groups_empty = tensor.empty() : tensor<8x8x8x3x3xf32>
  %acc_groups_zero = linalg.fill ins(%zero : f32) outs(%acc_groups_empty : tensor<8x8x8x3x3xf32>) -> tensor<8x8x8x3x3xf32>
  %acc_groups = linalg.generic {indexing_maps = [affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>, affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>, affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>, affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>, affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>, affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>, affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>, affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>, affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>, affine_map<(g, k, c, f0, f1, n) -> (g, k, c, f0, f1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%per_tap#0, %per_tap#1, %per_tap#2, %per_tap#3, %per_tap#4, %per_tap#5, %per_tap#6, %per_tap#7, %per_tap#8 : tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>, tensor<16x8x8x8xf32>) outs(%acc_groups_zero : tensor<8x8x8x3x3xf32>) {
  ^bb0(%p0: f32, %p1: f32, %p2: f32, %p3: f32, %p4: f32, %p5: f32, %p6: f32, %p7: f32, %p8: f32, %sum: f32):
    %f0_index = linalg.index 3 : index
    %f1_index = linalg.index 4 : index
    %tap = affine.apply affine_map<(f0, f1) -> (f0 * 3 + f1)>(%f0_index, %f1_index)
    %c1 = arith.constant 1 : index
    %tap_is_1 = arith.cmpi eq, %tap, %c1 : index
    %picked1 = arith.select %tap_is_1, %p1, %p0 : f32
    %c2 = arith.constant 2 : index
    %tap_is_2 = arith.cmpi eq, %tap, %c2 : index
    %picked2 = arith.select %tap_is_2, %p2, %picked1 : f32
    %c3 = arith.constant 3 : index
    %tap_is_3 = arith.cmpi eq, %tap, %c3 : index
    %picked3 = arith.select %tap_is_3, %p3, %picked2 : f32
    %c4 = arith.constant 4 : index
    %tap_is_4 = arith.cmpi eq, %tap, %c4 : index
    %picked4 = arith.select %tap_is_4, %p4, %picked3 : f32
    %c5 = arith.constant 5 : index
    %tap_is_5 = arith.cmpi eq, %tap, %c5 : index
    %picked5 = arith.select %tap_is_5, %p5, %picked4 : f32
    %c6 = arith.constant 6 : index
    %tap_is_6 = arith.cmpi eq, %tap, %c6 : index
    %picked6 = arith.select %tap_is_6, %p6, %picked5 : f32
    %c7 = arith.constant 7 : index
    %tap_is_7 = arith.cmpi eq, %tap, %c7 : index
    %picked7 = arith.select %tap_is_7, %p7, %picked6 : f32
    %c8 = arith.constant 8 : index
    %tap_is_8 = arith.cmpi eq, %tap, %c8 : index
    %picked8 = arith.select %tap_is_8, %p8, %picked7 : f32
    %new_sum = arith.addf %sum, %picked8 : f32
    linalg.yield %new_sum : f32
  } -> tensor<8x8x8x3x3xf32>
  %acc = tensor.collapse_shape %acc_groups [[0, 1], [2], [3], [4]] : tensor<8x8x8x3x3xf32> into !acc_flat
  %grad_w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : !acc_flat) outs(%dst : !grad_w) {
  ^bb0(%a: f32, %unused: f32):

    linalg.yield %a : f32
  } -> !grad_w
  return %grad_w : !grad_w
}
