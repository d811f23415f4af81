// Max-pool 2-D backward, layout NHWC: grad_in from grad_out and the forward's indices.
//
// Per spatial axis (s stride, d dilation, p_lo low padding) the forward's window o reads the taps
//     i = s*o + d*f - p_lo,   f < k,
// skipping those in the padding. The adjoint hands grad_out[n, c, o] back to the taps of window o; what a tap
// receives is the operator's contribution:
// Max pooling: the forward takes window o's maximum from x[n, c, indices[n, c, o]] (flat position h*W + w), so
//     grad_in[n, c, h, w] = sum over windows o with indices[n, c, o] == h*W + w of grad_out[n, c, o];
// gradients of overlapping windows that share an argmax add up.
// Gather form (no scatter, no atomics): position i lies in window o exactly when s*o + d*f = i + p_lo for a
// tap f < k, that is
//     o = (i + p_lo) floordiv s - j,   j < J = ceil((d*(k-1) + 1) / s),
// with r = i + p_lo - s*o = (i + p_lo) mod s + s*j a multiple of d below d*(k-1) + 1. Each grad_in element sums
// the contributions of its candidate windows (J per axis: 1 x 1), masking those that are not real
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
// Problem: maxpool2d_bwd_nhwc_float16_n32_c128_i112x112_o56x56_k2x2_s2x2_d1x1_p0_0x0_0_from_indices_int64

!grad_out = tensor<32x56x56x128xf16>
!grad_in = tensor<32x112x112x128xf16>
!argmax = tensor<32x56x56x128xi64>
!acc = tensor<32x112x112x128xf32>
!candidates = tensor<i8>

func.func @maxpool2d_bwd_nhwc_float16_n32_c128_i112x112_o56x56_k2x2_s2x2_d1x1_p0_0x0_0_from_indices_int64(%grad_out: !grad_out, %indices: !argmax, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  // indices: each window's argmax, from maxpool2d_fwd
  %acc_empty = tensor.empty() : !acc
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc) -> !acc
  %candidates = tensor.empty() : !candidates
  %acc = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%candidates : !candidates) outs(%acc_zero : !acc) {
  ^bb0(%unused: i8, %sum: f32):
    %c0 = arith.constant 0 : index
    %n = linalg.index 0 : index
    %c = linalg.index 3 : index
    %i_h = linalg.index 1 : index
    %o_h = affine.apply affine_map<(i) -> ((i + 0) floordiv 2)>(%i_h)
    %r_h = affine.apply affine_map<(i) -> ((i + 0) mod 2)>(%i_h)
    %o_h_size = arith.constant 56 : index
    %span_h = arith.constant 2 : index
    %o_h_lt = arith.cmpi slt, %o_h, %o_h_size : index
    %r_h_lt = arith.cmpi slt, %r_h, %span_h : index
    %o_h_last = arith.constant 55 : index
    %o_h_low = arith.maxsi %o_h, %c0 : index
    %o_h_clamped = arith.minsi %o_h_low, %o_h_last : index
    %i_w = linalg.index 2 : index
    %o_w = affine.apply affine_map<(i) -> ((i + 0) floordiv 2)>(%i_w)
    %r_w = affine.apply affine_map<(i) -> ((i + 0) mod 2)>(%i_w)
    %o_w_size = arith.constant 56 : index
    %span_w = arith.constant 2 : index
    %o_w_lt = arith.cmpi slt, %o_w, %o_w_size : index
    %r_w_lt = arith.cmpi slt, %r_w, %span_w : index
    %o_w_last = arith.constant 55 : index
    %o_w_low = arith.maxsi %o_w, %c0 : index
    %o_w_clamped = arith.minsi %o_w_low, %o_w_last : index
    %in_window_0 = arith.andi %o_h_lt, %r_h_lt : i1
    %in_window_1 = arith.andi %in_window_0, %o_w_lt : i1
    %in_window = arith.andi %in_window_1, %r_w_lt : i1
    %position = affine.apply affine_map<(h, w) -> (h * 112 + w)>(%i_h, %i_w)
    %position_i = arith.index_cast %position : index to i64
    %g = tensor.extract %grad_out[%n, %o_h_clamped, %o_w_clamped, %c] : !grad_out
    %window_argmax = tensor.extract %indices[%n, %o_h_clamped, %o_w_clamped, %c] : !argmax
    %hit = arith.cmpi eq, %window_argmax, %position_i : i64
    %routed = arith.andi %in_window, %hit : i1
    %g32 = arith.extf %g : f16 to f32
    %contribution = arith.select %routed, %g32, %zero : f32
    %new_sum = arith.addf %sum, %contribution : f32
    linalg.yield %new_sum : f32
  } -> !acc
  %grad_in = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : !acc) outs(%dst : !grad_in) {
  ^bb0(%a: f32, %unused_dst: f16):
    %v = arith.truncf %a : f32 to f16
    linalg.yield %v : f16
  } -> !grad_in
  return %grad_in : !grad_in
}
