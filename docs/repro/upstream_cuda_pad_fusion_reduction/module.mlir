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
// The batch splits into 1 chunks of 64 (the same free reshape, N = J*Nc): the weight
// gradient is small and its reduction long (here 3136 terms per element), so one dispatch
// computes J partial sums in parallel and a second adds them:
//     partial[j, g, k, f, c] = sum_{nc, o} x_padded[j*Nc + nc, s*o + d*f, g, c] * grad_out[j*Nc + nc, o, g, k]
//     grad_w[g*K + k, f, c]  = sum_j partial[j, g, k, f, c]
// (J = 1: no split, no J dim and no sum.) One linalg.generic over (g, k, c, f0, f1, n, o0, o1) accumulates float32 into
// !partial = (G, K, C, F0, F1); tensor.collapse_shape merges (G, K); the sum over J casts to f32.
//
// Problem: grouped_conv_bwd_weight_2d_nchw_float32_n64_g960_c1_k1_i7x7_f3x3_s1x1_d1x1_p1_1x1_1

!x = tensor<64x960x7x7xf32>
!grad_out = tensor<64x960x7x7xf32>
!grad_w = tensor<960x1x3x3xf32>
!x_padded = tensor<64x960x9x9xf32>
!x_groups = tensor<64x960x1x9x9xf32>
!grad_out_groups = tensor<64x960x1x7x7xf32>
!partial = tensor<960x1x1x3x3xf32>
!partial_flat = tensor<960x1x3x3xf32>
!acc_flat = tensor<960x1x3x3xf32>

func.func @grouped_conv_bwd_weight_2d_nchw_float32_n64_g960_c1_k1_i7x7_f3x3_s1x1_d1x1_p1_1x1_1(%x: !x, %grad_out: !grad_out, %dst: !grad_w {iree.abi.output = 0 : index}) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f32
  %x_padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero_element : f32
  } : !x to !x_padded
  %x_groups = tensor.expand_shape %x_padded [[0], [1, 2], [3], [4]] output_shape [64, 960, 1, 9, 9] : !x_padded into !x_groups
  %grad_out_groups = tensor.expand_shape %grad_out [[0], [1, 2], [3], [4]] output_shape [64, 960, 1, 7, 7] : !grad_out into !grad_out_groups
  // grad_w[g, f] = sum_{n, o} x_padded[n, g, s*o + d*f] * grad_out[n, g, o] in two generics. The first keeps
  // (n, g, f.., o_last) and reduces the other output axes, so that a workgroup's neighbouring threads (along
  // o_last) read neighbouring positions of x's and grad_out's contiguous rows; the second sums (n, o_last).
  %columns_empty = tensor.empty() : tensor<64x960x3x3x7xf32>
  %columns_zero = linalg.fill ins(%zero : f32) outs(%columns_empty : tensor<64x960x3x3x7xf32>) -> tensor<64x960x3x3x7xf32>
  %columns = linalg.generic {indexing_maps = [affine_map<(n, g, f0, f1, o1, o0) -> (n, g, o0, o1)>, affine_map<(n, g, f0, f1, o1, o0) -> (n, g, o0 + f0, o1 + f1)>, affine_map<(n, g, f0, f1, o1, o0) -> (n, g, f0, f1, o1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"], compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{reduction = [0, 0, 0, 0, 0, 8], thread = [1, 1, 1, 1, 1, 0], workgroup = [1, 3, 3, 1, 7, 0]}>, translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [63, 1, 1] subgroup_size = 32>>}
      ins(%grad_out, %x_padded : !grad_out, !x_padded) outs(%columns_zero : tensor<64x960x3x3x7xf32>) {
  ^bb0(%gv: f32, %xv: f32, %sum: f32):
    // f32 inputs: no extension
    %product = arith.mulf %xv, %gv : f32
    %new_sum = arith.addf %sum, %product : f32
    linalg.yield %new_sum : f32
  } -> tensor<64x960x3x3x7xf32>
  %taps_empty = tensor.empty() : tensor<960x3x3xf32>
  %taps_zero = linalg.fill ins(%zero : f32) outs(%taps_empty : tensor<960x3x3xf32>) -> tensor<960x3x3xf32>
  %taps = linalg.generic {indexing_maps = [affine_map<(g, f0, f1, n, o1) -> (n, g, f0, f1, o1)>, affine_map<(g, f0, f1, n, o1) -> (g, f0, f1)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%columns : tensor<64x960x3x3x7xf32>) outs(%taps_zero : tensor<960x3x3xf32>) {
  ^bb0(%p: f32, %s: f32):
    %new_s = arith.addf %s, %p : f32
    linalg.yield %new_s : f32
  } -> tensor<960x3x3xf32>
  %acc = tensor.expand_shape %taps [[0, 1], [2], [3]] output_shape [960, 1, 3, 3] : tensor<960x3x3xf32> into !acc_flat
  %grad_w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : !acc_flat) outs(%dst : !grad_w) {
  ^bb0(%a: f32, %unused: f32):

    linalg.yield %a : f32
  } -> !grad_w
  return %grad_w : !grad_w
}
