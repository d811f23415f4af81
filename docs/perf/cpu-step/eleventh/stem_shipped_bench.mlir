// The shipped module of cnn3d's 3-D stem weight gradient (tenth/stem_per_image_nn.mlir with the tuning table's pinned
// matmul tile), for dispatch_times.sh: see stem_dispatches.txt.
// The shipped form (per_image_nn) of cnn3d's stem weight gradient, as ops renders it, with its destination and
// workspace arguments removed so that iree-benchmark-module can call it.
// Grouped convolution backward-weight (CK example 20_grouped_conv_bwd_weight), 3-D, layout NCDHW.
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
// The batch splits into 1 chunks of 4 (the same free reshape, N = J*Nc): the weight
// gradient is small and its reduction long (here 32768 terms per element), so one dispatch
// computes J partial sums in parallel and a second adds them:
//     partial[j, g, k, f, c] = sum_{nc, o} x_padded[j*Nc + nc, s*o + d*f, g, c] * grad_out[j*Nc + nc, o, g, k]
//     grad_w[g*K + k, f, c]  = sum_j partial[j, g, k, f, c]
// (J = 1: no split, no J dim and no sum.) One linalg.generic over (g, k, c, f0, f1, f2, n, o0, o1, o2) accumulates float32 into
// !partial = (G, K, C, F0, F1, F2); tensor.collapse_shape merges (G, K); the sum over J casts to f32.
//
// Problem: grouped_conv_bwd_weight_3d_ncdhw_float32_n4_g1_c3_k16_i8x32x32_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1

!x = tensor<4x3x8x32x32xf32>
!grad_out = tensor<4x16x8x32x32xf32>
!grad_w = tensor<16x3x3x3x3xf32>
!x_padded = tensor<4x3x10x34x34xf32>
!x_groups = tensor<4x1x3x10x34x34xf32>
!grad_out_groups = tensor<4x1x16x8x32x32xf32>
!partial = tensor<1x16x3x3x3x3xf32>
!partial_flat = tensor<16x3x3x3x3xf32>
!acc_flat = tensor<16x3x3x3x3xf32>

func.func @grouped_conv_bwd_weight_3d_ncdhw_float32_n4_g1_c3_k16_i8x32x32_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1(%x: !x, %grad_out: !grad_out) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f32
  %x_padded = tensor.pad %x low[0, 0, 1, 1, 1] high[0, 0, 1, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero_element : f32
  } : !x to !x_padded
  %x_groups = tensor.expand_shape %x_padded [[0], [1, 2], [3], [4], [5]] output_shape [4, 1, 3, 10, 34, 34] : !x_padded into !x_groups
  %grad_out_groups = tensor.expand_shape %grad_out [[0], [1, 2], [3], [4], [5]] output_shape [4, 1, 16, 8, 32, 32] : !grad_out into !grad_out_groups
  // per_image's matmuls reduce along the contiguous axis of both operands (the output positions o). Here one
  // operand is laid out (o, channels) first, so that each matmul streams rows of its other output axis: the
  // operand with fewer columns per image (grad_out) is the one moved, and the matmul's rows are the larger side
  // ((c, f)). IREE must keep that transpose (--iree-global-opt-propagate-transposes=false, the tuning table's rule).
  //     cols[n, g, c, f, o] = x_padded[n, g, c, s*o + d*f]
  //     per_image[(n, g), (c, f), k] = sum_o cols[(n, g), (c, f), o] * grad_out_t[(n, g), o, k]        (grad_out moved)
  //     per_image[(n, g), k, (c, f)] = sum_o grad_out[(n, g), k, o] * cols_t[(n, g), o, (c, f)]        (cols moved)
  //     grad_w[g, k, c, f] = sum_n per_image[n, g, .., ..]
  %cols_empty = tensor.empty() : tensor<4x1x3x3x3x3x8x32x32xf32>
  %cols = linalg.generic {indexing_maps = [affine_map<(n, g, c, f0, f1, f2, o0, o1, o2) -> (n, g, c, o0 + f0, o1 + f1, o2 + f2)>, affine_map<(n, g, c, f0, f1, f2, o0, o1, o2) -> (n, g, c, f0, f1, f2, o0, o1, o2)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x_groups : !x_groups) outs(%cols_empty : tensor<4x1x3x3x3x3x8x32x32xf32>) {
  ^bb0(%xv: f32, %unused: f32):
    linalg.yield %xv : f32
  } -> tensor<4x1x3x3x3x3x8x32x32xf32>
  %cols_matrix = tensor.collapse_shape %cols [[0, 1], [2, 3, 4, 5], [6, 7, 8]] : tensor<4x1x3x3x3x3x8x32x32xf32> into tensor<4x81x8192xf32>
  %grad_out_t_empty = tensor.empty() : tensor<4x1x8x32x32x16xf32>
  %grad_out_t = linalg.transpose ins(%grad_out_groups : !grad_out_groups) outs(%grad_out_t_empty : tensor<4x1x8x32x32x16xf32>) permutation = [0, 1, 3, 4, 5, 2]
  %grad_out_matrix = tensor.collapse_shape %grad_out_t [[0, 1], [2, 3, 4], [5]] : tensor<4x1x8x32x32x16xf32> into tensor<4x8192x16xf32>
  %per_image_empty = tensor.empty() : tensor<4x81x16xf32>
  %per_image_zero = linalg.fill ins(%zero : f32) outs(%per_image_empty : tensor<4x81x16xf32>) -> tensor<4x81x16xf32>
  %per_image = linalg.batch_matmul {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [1, 27, 16, 0], vector_common_parallel = [1, 9, 16, 0], vector_reduction = [0, 0, 0, 16]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>} ins(%cols_matrix, %grad_out_matrix : tensor<4x81x8192xf32>, tensor<4x8192x16xf32>) outs(%per_image_zero : tensor<4x81x16xf32>) -> tensor<4x81x16xf32>
  %per_image_taps = tensor.expand_shape %per_image [[0, 1], [2, 3, 4, 5], [6]] output_shape [4, 1, 3, 3, 3, 3, 16] : tensor<4x81x16xf32> into tensor<4x1x3x3x3x3x16xf32>
  %acc_groups_empty = tensor.empty() : tensor<1x16x3x3x3x3xf32>
  %acc_groups_zero = linalg.fill ins(%zero : f32) outs(%acc_groups_empty : tensor<1x16x3x3x3x3xf32>) -> tensor<1x16x3x3x3x3xf32>
  %acc_groups = linalg.generic {indexing_maps = [affine_map<(n, g, k, c, f0, f1, f2) -> (n, g, c, f0, f1, f2, k)>, affine_map<(n, g, k, c, f0, f1, f2) -> (g, k, c, f0, f1, f2)>], iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%per_image_taps : tensor<4x1x3x3x3x3x16xf32>) outs(%acc_groups_zero : tensor<1x16x3x3x3x3xf32>) {
  ^bb0(%p: f32, %sum: f32):
    %new_sum = arith.addf %sum, %p : f32
    linalg.yield %new_sum : f32
  } -> tensor<1x16x3x3x3x3xf32>
  %acc = tensor.collapse_shape %acc_groups [[0, 1], [2], [3], [4], [5]] : tensor<1x16x3x3x3x3xf32> into !acc_flat
  %acc_groups_empty2 = tensor.empty() : !grad_w
  %grad_w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : !acc_flat) outs(%acc_groups_empty2 : !grad_w) {
  ^bb0(%a: f32, %unused: f32):

    linalg.yield %a : f32
  } -> !grad_w
  return %grad_w : !grad_w
}
