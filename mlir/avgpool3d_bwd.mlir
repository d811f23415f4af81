// Average-pool 3-D backward, layout ${layout}.
//
// The forward averages window o's taps, per spatial axis (s stride, d dilation, p_lo low padding)
//     i = s*o + d*f - p_lo,   f < k,
// over the taps inside the input, dividing by divisor(o) (PyTorch's: divisor_override, or the taps inside the
// padded input (count_include_pad; a ceil_mode window running past the padded end is clipped there), or the
// taps inside the input; with CK's window dilation, dilated taps are counted the same way). Its adjoint hands
// each tap an equal share:
//     grad_in[n, c, i] = sum over windows o holding i of grad_out[n, c, o] / divisor(o).
// Gather form (no scatter, no atomics): position i lies in window o exactly when s*o + d*f = i + p_lo for a
// tap f < k, that is
//     o = (i + p_lo) floordiv s - j,   j < J = ceil((d*(k-1) + 1) / s),
// with r = i + p_lo - s*o = (i + p_lo) mod s + s*j a multiple of d below d*(k-1) + 1. Each grad_in element sums
// its candidate windows (J_d x J_h x J_w = ${candidates}), masking those that are not real windows holding it
// (o outside [0, O), r not a tap offset). The candidates are reduction dims sized by the shape-only operand
// !candidates; when the windows never overlap (J = 1 on every axis: stride >= the dilated window) !candidates
// is 0-D and the gather is one elementwise pass. Index arithmetic is in the body (no negative coefficients in
// indexing maps); the extract indices are clamped into grad_out even for masked candidates. Per-axis tap
// counts are tables (the divisor is their product); the sum is float32, cast to ${element} at the store.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!grad_in = ${grad_in_type}
!acc = ${acc_type}
!candidates = ${candidates_type}

func.func @${function}(%grad_out: !grad_out, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
${divisor_tables}
  %acc_empty = tensor.empty() : !acc
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc) -> !acc
  %candidates = tensor.empty() : !candidates
  %acc = linalg.generic {indexing_maps = [${candidates_map}, ${acc_map}], iterator_types = ${gather_iterators}}
      ins(%candidates : !candidates) outs(%acc_zero : !acc) {
  ^bb0(%unused: i8, %sum: f32):
    %c0 = arith.constant 0 : index
${windows_of_position}
${divisor}
    %g = tensor.extract %grad_out[${window_indices}] : !grad_out
${g_to_f32}
    %share = arith.divf ${g32}, %divisor : f32
    %contribution = arith.select %in_window, %share, %zero : f32
    %new_sum = arith.addf %sum, %contribution : f32
    linalg.yield %new_sum : f32
  } -> !acc
  %grad_in = linalg.generic {indexing_maps = [${grid_map}, ${grid_map}], iterator_types = ${grid_iterators}}
      ins(%acc : !acc) outs(%dst : !grad_in) {
  ^bb0(%a: f32, %unused_dst: ${element}):
${store_body}
  } -> !grad_in
  return %grad_in : !grad_in
}
