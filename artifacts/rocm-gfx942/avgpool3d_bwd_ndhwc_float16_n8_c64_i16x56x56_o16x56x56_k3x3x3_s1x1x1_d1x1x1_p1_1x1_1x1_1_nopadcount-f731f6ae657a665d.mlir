// Average-pool 3-D backward, layout NDHWC: grad_in from grad_out.
//
// Per spatial axis (s stride, d dilation, p_lo low padding) the forward's window o reads the taps
//     i = s*o + d*f - p_lo,   f < k,
// skipping those in the padding. The adjoint hands grad_out[n, c, o] back to the taps of window o; what a tap
// receives is the operator's contribution:
// Average pooling: window o shares grad_out[n, c, o] equally among its taps,
//     grad_in[n, c, i] = sum over windows o holding i of grad_out[n, c, o] / divisor(o),
// with PyTorch's divisor: divisor_override, or the taps inside the padded input (count_include_pad; a ceil_mode
// window running past the padded end is clipped there), or the taps inside the input; with CK's window
// dilation, dilated taps are counted the same way. Per-axis tap counts are tables indexed by the window (the
// divisor is their product).
// Gather form (no scatter, no atomics): position i lies in window o exactly when s*o + d*f = i + p_lo for a
// tap f < k, that is
//     o = (i + p_lo) floordiv s - j,   j < J = ceil((d*(k-1) + 1) / s),
// with r = i + p_lo - s*o = (i + p_lo) mod s + s*j a multiple of d below d*(k-1) + 1. Each grad_in element sums
// the contributions of its candidate windows (J per axis: 3 x 3 x 3), masking those that are not real
// windows holding it (o outside [0, O), r not a tap offset). The candidates are reduction dims sized by the
// shape-only operand !candidates; when the windows never overlap (J = 1 on every axis: stride >= the dilated
// window) !candidates is 0-D and the gather is one elementwise pass. Index arithmetic is in the body (no
// negative coefficients in indexing maps); the extract indices are clamped into grad_out even for masked
// candidates. The sum is float32, cast to f16 at the store.
//
// Every pooling backward is this gather (as PyTorch's col2im reuses im2col's index helper): the skeleton here
// and the window fragments below (per axis: window_candidates where windows overlap, j a reduction dim;
// window_disjoint where they do not, j = 0; window_only for an axis with one window, o = 0), and the operator's
// fragments (avg_*, max_*) for its source operand, its function-level prologue and its contribution.
//
// Problem: avgpool3d_bwd_ndhwc_float16_n8_c64_i16x56x56_o16x56x56_k3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_nopadcount

!grad_out = tensor<8x16x56x56x64xf16>
!grad_in = tensor<8x16x56x56x64xf16>

!acc = tensor<8x16x56x56x64xf32>
!candidates = tensor<3x3x3xi8>

func.func @avgpool3d_bwd_ndhwc_float16_n8_c64_i16x56x56_o16x56x56_k3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_nopadcount(%grad_out: !grad_out, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  // Taps each window counts along the axes where windows differ (padding, ceil_mode); the divisor is their product
  %tap_counts_d = arith.constant dense<[2.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 2.0]> : tensor<16xf32>
  %tap_counts_h = arith.constant dense<[2.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 2.0]> : tensor<56xf32>
  %tap_counts_w = arith.constant dense<[2.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 2.0]> : tensor<56xf32>
  %acc_empty = tensor.empty() : !acc
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc) -> !acc
  %candidates = tensor.empty() : !candidates
  %acc = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%candidates : !candidates) outs(%acc_zero : !acc) {
  ^bb0(%unused: i8, %sum: f32):
    %c0 = arith.constant 0 : index
    %n = linalg.index 0 : index
    %c = linalg.index 4 : index
    %i_d = linalg.index 1 : index
    %j_d = linalg.index 5 : index
    %o_d = affine.apply affine_map<(i, j) -> ((i + 1) floordiv 1 - j)>(%i_d, %j_d)
    %r_d = affine.apply affine_map<(i, j) -> ((i + 1) mod 1 + j * 1)>(%i_d, %j_d)
    %o_d_ge = arith.cmpi sge, %o_d, %c0 : index
    %o_d_size = arith.constant 16 : index
    %span_d = arith.constant 3 : index
    %o_d_lt = arith.cmpi slt, %o_d, %o_d_size : index
    %r_d_lt = arith.cmpi slt, %r_d, %span_d : index
    %o_d_last = arith.constant 15 : index
    %o_d_low = arith.maxsi %o_d, %c0 : index
    %o_d_clamped = arith.minsi %o_d_low, %o_d_last : index
    %i_h = linalg.index 2 : index
    %j_h = linalg.index 6 : index
    %o_h = affine.apply affine_map<(i, j) -> ((i + 1) floordiv 1 - j)>(%i_h, %j_h)
    %r_h = affine.apply affine_map<(i, j) -> ((i + 1) mod 1 + j * 1)>(%i_h, %j_h)
    %o_h_ge = arith.cmpi sge, %o_h, %c0 : index
    %o_h_size = arith.constant 56 : index
    %span_h = arith.constant 3 : index
    %o_h_lt = arith.cmpi slt, %o_h, %o_h_size : index
    %r_h_lt = arith.cmpi slt, %r_h, %span_h : index
    %o_h_last = arith.constant 55 : index
    %o_h_low = arith.maxsi %o_h, %c0 : index
    %o_h_clamped = arith.minsi %o_h_low, %o_h_last : index
    %i_w = linalg.index 3 : index
    %j_w = linalg.index 7 : index
    %o_w = affine.apply affine_map<(i, j) -> ((i + 1) floordiv 1 - j)>(%i_w, %j_w)
    %r_w = affine.apply affine_map<(i, j) -> ((i + 1) mod 1 + j * 1)>(%i_w, %j_w)
    %o_w_ge = arith.cmpi sge, %o_w, %c0 : index
    %o_w_size = arith.constant 56 : index
    %span_w = arith.constant 3 : index
    %o_w_lt = arith.cmpi slt, %o_w, %o_w_size : index
    %r_w_lt = arith.cmpi slt, %r_w, %span_w : index
    %o_w_last = arith.constant 55 : index
    %o_w_low = arith.maxsi %o_w, %c0 : index
    %o_w_clamped = arith.minsi %o_w_low, %o_w_last : index
    %in_window_0 = arith.andi %o_d_ge, %o_d_lt : i1
    %in_window_1 = arith.andi %in_window_0, %r_d_lt : i1
    %in_window_2 = arith.andi %in_window_1, %o_h_ge : i1
    %in_window_3 = arith.andi %in_window_2, %o_h_lt : i1
    %in_window_4 = arith.andi %in_window_3, %r_h_lt : i1
    %in_window_5 = arith.andi %in_window_4, %o_w_ge : i1
    %in_window_6 = arith.andi %in_window_5, %o_w_lt : i1
    %in_window = arith.andi %in_window_6, %r_w_lt : i1
    %divisor_uniform = arith.constant 1.0 : f32
    %divisor_d = tensor.extract %tap_counts_d[%o_d_clamped] : tensor<16xf32>
    %divisor_h = tensor.extract %tap_counts_h[%o_h_clamped] : tensor<56xf32>
    %divisor_w = tensor.extract %tap_counts_w[%o_w_clamped] : tensor<56xf32>
    %divisor_0 = arith.mulf %divisor_uniform, %divisor_d : f32
    %divisor_1 = arith.mulf %divisor_0, %divisor_h : f32
    %divisor = arith.mulf %divisor_1, %divisor_w : f32
    %g = tensor.extract %grad_out[%n, %o_d_clamped, %o_h_clamped, %o_w_clamped, %c] : !grad_out
    %g32 = arith.extf %g : f16 to f32
    %share = arith.divf %g32, %divisor : f32
    %contribution = arith.select %in_window, %share, %zero : f32
    %new_sum = arith.addf %sum, %contribution : f32
    linalg.yield %new_sum : f32
  } -> !acc
  %grad_in = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : !acc) outs(%dst : !grad_in) {
  ^bb0(%a: f32, %unused_dst: f16):
    %v = arith.truncf %a : f32 to f16
    linalg.yield %v : f16
  } -> !grad_in
  return %grad_in : !grad_in
}
