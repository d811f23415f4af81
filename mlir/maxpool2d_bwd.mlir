// Max-pool 2-D backward, layout ${layout}: grad_in from grad_out and ${source_description}.
//
// The forward hands window o's maximum from x[n, c, indices[n, c, o]] (flat position h*W + w), so
//     grad_in[n, c, h, w] = sum over windows o with indices[n, c, o] == h*W + w of grad_out[n, c, o].
// Gather form (no scatter, no atomics): per spatial axis (s stride, d dilation, p_lo low padding) position i
// lies in window o exactly when s*o + d*f = i + p_lo for a tap f < k, that is
//     o = (i + p_lo) floordiv s - j,   j < J = ceil((d*(k-1) + 1) / s),
// with r = i + p_lo - s*o = (i + p_lo) mod s + s*j a multiple of d below d*(k-1) + 1. Each grad_in element sums,
// over its candidate windows (J_h * J_w of them: ${candidates}), grad_out[o] where the candidate is a real window
// (0 <= o < O, r a tap offset) whose argmax is this element. The candidates are reduction dims sized by the
// shape-only operand !candidates; when the windows never overlap (J = 1 on both axes) !candidates is 0-D and
// the gather is one elementwise pass. Index arithmetic is in the body (no negative coefficients in indexing
// maps) and the extract indices are clamped into grad_out even for masked candidates. The sum is float32;
// gradients of overlapping windows that share an argmax add up.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!grad_in = ${grad_in_type}
!argmax = ${indices_type}
!acc = ${acc_type}
!candidates = ${candidates_type}
${source_types}

func.func @${function}(%grad_out: !grad_out, ${source_argument}, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
${argmax_source}
  %acc_empty = tensor.empty() : !acc
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc) -> !acc
  %candidates = tensor.empty() : !candidates
  %acc = linalg.generic {indexing_maps = [${candidates_map}, ${acc_map}], iterator_types = ${gather_iterators}}
      ins(%candidates : !candidates) outs(%acc_zero : !acc) {
  ^bb0(%unused: i8, %sum: f32):
    %c0 = arith.constant 0 : index
${windows_of_position}
    %position = affine.apply ${position_map}(${position_operands})
    %position_i = arith.index_cast %position : index to ${index_type}
    %g = tensor.extract %grad_out[${window_indices}] : !grad_out
    %window_argmax = tensor.extract %indices[${window_indices}] : !argmax
    %hit = arith.cmpi eq, %window_argmax, %position_i : ${index_type}
    %routed = arith.andi %in_window, %hit : i1
${g_to_f32}
    %contribution = arith.select %routed, ${g32}, %zero : f32
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
