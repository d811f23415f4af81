// Hand-edited from the shipped per_image form (hand_variants.txt): the stem's cols laid out (n, o, (c, f)) so that the
// per-image product is a plain batch_matmul (grad_out times cols), then transposed to the shipped (n, (c, f), k).
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
// gradient is small and its reduction long (here 16384 terms per element), so one dispatch
// computes J partial sums in parallel and a second adds them:
//     partial[j, g, k, f, c] = sum_{nc, o} x_padded[j*Nc + nc, s*o + d*f, g, c] * grad_out[j*Nc + nc, o, g, k]
//     grad_w[g*K + k, f, c]  = sum_j partial[j, g, k, f, c]
// (J = 1: no split, no J dim and no sum.) One linalg.generic over (g, k, c, f0, f1, n, o0, o1) accumulates float32 into
// !partial = (G, K, C, F0, F1); tensor.collapse_shape merges (G, K); the sum over J casts to f32.
//
// Problem: grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c3_k32_i32x32_f3x3_s1x1_d1x1_p1_1x1_1

!x = tensor<16x3x32x32xf32>
!grad_out = tensor<16x32x32x32xf32>
!grad_w = tensor<32x3x3x3xf32>
!x_padded = tensor<16x3x34x34xf32>
!x_groups = tensor<16x1x3x34x34xf32>
!grad_out_groups = tensor<16x1x32x32x32xf32>
!partial = tensor<1x32x3x3x3xf32>
!partial_flat = tensor<32x3x3x3xf32>
!acc_flat = tensor<32x3x3x3xf32>

func.func @grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c3_k32_i32x32_f3x3_s1x1_d1x1_p1_1x1_1(%x: !x, %grad_out: !grad_out, %dst: !grad_w {iree.abi.output = 0 : index}// caller (ops/runtime.py) passes one workspace, kept and reused across calls, of at least the size IREE reports in
// the function's reflection (iree.abi.transients.size.constant): without it each call's intermediates (the gathered
// taps: hundreds of MB on the CK problems) would be fresh pages, faulted in on every call.
, %transients: !hal.buffer {iree.abi.transients}) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f32
  %x_padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : f32
  } : !x to !x_padded
  %x_groups = tensor.expand_shape %x_padded [[0], [1, 2], [3], [4]] output_shape [16, 1, 3, 34, 34] : !x_padded into !x_groups
  %grad_out_groups = tensor.expand_shape %grad_out [[0], [1, 2], [3], [4]] output_shape [16, 1, 32, 32, 32] : !grad_out into !grad_out_groups
  // The im2col form's one matmul per group has K x F*C outputs and a reduction of N*O: few output tiles for two
  // cores when C is small (a first layer), and IREE does not split a reduction. Here each image is its own batch
  // entry, read where x and grad_out lie (channels-first: the output positions o last, no copy of grad_out):
  //     cols[n, g, c, f, o] = x_padded[n, g, c, s*o + d*f]
  //     per_image[(n, g), (c, f), k] = sum_o cols[(n, g), (c, f), o] * grad_out[(n, g), k, o]
  //     grad_w[g, k, c, f] = sum_n per_image[n, g, (c, f), k]
  %cols_empty = tensor.empty() : tensor<16x1x32x32x3x3x3xf32>
  %cols = linalg.generic {indexing_maps = [affine_map<(n, g, o0, o1, c, f0, f1) -> (n, g, c, o0 + f0, o1 + f1)>, affine_map<(n, g, o0, o1, c, f0, f1) -> (n, g, o0, o1, c, f0, f1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x_groups : !x_groups) outs(%cols_empty : tensor<16x1x32x32x3x3x3xf32>) {
  ^bb0(%xv: f32, %unused: f32):
    linalg.yield %xv : f32
  } -> tensor<16x1x32x32x3x3x3xf32>
  %cols_matrix = tensor.collapse_shape %cols [[0, 1], [2, 3], [4, 5, 6]] : tensor<16x1x32x32x3x3x3xf32> into tensor<16x1024x27xf32>
  %grad_out_matrix = tensor.collapse_shape %grad_out_groups [[0, 1], [2], [3, 4]] : !grad_out_groups into tensor<16x32x1024xf32>
  %per_image_empty = tensor.empty() : tensor<16x32x27xf32>
  %per_image_zero = linalg.fill ins(%zero : f32) outs(%per_image_empty : tensor<16x32x27xf32>) -> tensor<16x32x27xf32>
  %per_image_kc = linalg.batch_matmul ins(%grad_out_matrix, %cols_matrix : tensor<16x32x1024xf32>, tensor<16x1024x27xf32>) outs(%per_image_zero : tensor<16x32x27xf32>) -> tensor<16x32x27xf32>
  %per_image_t_empty = tensor.empty() : tensor<16x27x32xf32>
  %per_image = linalg.transpose ins(%per_image_kc : tensor<16x32x27xf32>) outs(%per_image_t_empty : tensor<16x27x32xf32>) permutation = [0, 2, 1]
  %per_image_taps = tensor.expand_shape %per_image [[0, 1], [2, 3, 4], [5]] output_shape [16, 1, 3, 3, 3, 32] : tensor<16x27x32xf32> into tensor<16x1x3x3x3x32xf32>
  %acc_groups_empty = tensor.empty() : tensor<1x32x3x3x3xf32>
  %acc_groups_zero = linalg.fill ins(%zero : f32) outs(%acc_groups_empty : tensor<1x32x3x3x3xf32>) -> tensor<1x32x3x3x3xf32>
  %acc_groups = linalg.generic {indexing_maps = [affine_map<(n, g, k, c, f0, f1) -> (n, g, c, f0, f1, k)>, affine_map<(n, g, k, c, f0, f1) -> (g, k, c, f0, f1)>], iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%per_image_taps : tensor<16x1x3x3x3x32xf32>) outs(%acc_groups_zero : tensor<1x32x3x3x3xf32>) {
  ^bb0(%p: f32, %sum: f32):
    %new_sum = arith.addf %sum, %p : f32
    linalg.yield %new_sum : f32
  } -> tensor<1x32x3x3x3xf32>
  %acc = tensor.collapse_shape %acc_groups [[0, 1], [2], [3], [4]] : tensor<1x32x3x3x3xf32> into !acc_flat
  %grad_w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : !acc_flat) outs(%dst : !grad_w) {
  ^bb0(%a: f32, %unused: f32):

    linalg.yield %a : f32
  } -> !grad_w
  return %grad_w : !grad_w
}
