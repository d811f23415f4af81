// ${title}, layout ${layout}: grad_in from ${inputs}.
//
// Per spatial axis (s stride, d dilation, p_lo low padding) the forward's window o reads the taps
//     i = s*o + d*f - p_lo,   f < k,
// skipping those in the padding. The adjoint hands grad_out[n, c, o] back to the taps of window o; what a tap
// receives is the operator's contribution:
${contribution_note}
// Gather form (no scatter, no atomics): position i lies in window o exactly when s*o + d*f = i + p_lo for a
// tap f < k, that is
//     o = (i + p_lo) floordiv s - j,   j < J = ceil((d*(k-1) + 1) / s),
// with r = i + p_lo - s*o = (i + p_lo) mod s + s*j a multiple of d below d*(k-1) + 1. Each grad_in element sums
// the contributions of its candidate windows (J per axis: ${candidates}), masking those that are not real
// windows holding it (o outside [0, O), r not a tap offset). The candidates are reduction dims sized by the
// shape-only operand !candidates; when the windows never overlap (J = 1 on every axis: stride >= the dilated
// window) !candidates is 0-D and the gather is one elementwise pass. Index arithmetic is in the body (no
// negative coefficients in indexing maps); the extract indices are clamped into grad_out even for masked
// candidates. The sum is float32, cast to ${element} at the store.
//
// Every pooling backward is this gather (as PyTorch's col2im reuses im2col's index helper): the skeleton here
// and the window fragments below (per axis: window_candidates where windows overlap, j a reduction dim;
// window_disjoint where they do not, j = 0; window_only for an axis with one window, o = 0), and the operator's
// fragments (avg_*, max_*) for its source operand, its function-level prologue and its contribution.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!grad_in = ${grad_in_type}
${source_types}
!acc = ${acc_type}
!candidates = ${candidates_type}

func.func @${function}(${grad_out_argument}: !grad_out${source_argument}${activation_argument}, %dst: !grad_in {iree.abi.output = 0 : index}${transients}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
${prologue}
  %acc_empty = tensor.empty() : !acc
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc) -> !acc
  %candidates = tensor.empty() : !candidates
  %acc = linalg.generic {indexing_maps = [${candidates_map}, ${acc_map}], iterator_types = ${gather_iterators}}
      ins(%candidates : !candidates) outs(%acc_zero : !acc) {
  ^bb0(%unused: i8, %sum: f32):
    %c0 = arith.constant 0 : index
    %n = linalg.index ${batch_dim} : index
    %c = linalg.index ${channel_dim} : index
${windows_of_position}
${contribution}
    %new_sum = arith.addf %sum, %contribution : f32
    linalg.yield %new_sum : f32
  } -> !acc
  %grad_in = linalg.generic {indexing_maps = [${store_maps}], iterator_types = ${grid_iterators}}
      ins(${store_inputs}) outs(%dst : !grad_in) {
  ^bb0(%a: f32, ${store_arguments}%unused_dst: ${element}):
${narrow}
    linalg.yield ${stored} : ${element}
  } -> !grad_in
  return %grad_in : !grad_in
}

// fragment relu_mask: the ReLU's backward, fused into the store
// The ReLU before the pooling (its output %relu_output is the pooled input): PyTorch's threshold_backward,
// zero where that output is <= 0, the gradient elsewhere (a NaN output passes it, as in PyTorch).
${relu_to_f32}
%relu_off = arith.cmpf ole, ${relu32}, %zero : f32
%masked = arith.select %relu_off, %zero, %a : f32

// fragment window_candidates: an axis where windows overlap: candidate j is window o, tap offset r (checks o >= 0)
%i_${x} = linalg.index ${dim} : index
%j_${x} = linalg.index ${candidate_dim} : index
%o_${x} = affine.apply affine_map<(i, j) -> ((i + ${p_lo}) floordiv ${s} - j)>(%i_${x}, %j_${x})
%r_${x} = affine.apply affine_map<(i, j) -> ((i + ${p_lo}) mod ${s} + j * ${s})>(%i_${x}, %j_${x})
%o_${x}_ge = arith.cmpi sge, %o_${x}, %c0 : index

// fragment window_only: an axis with one window, o = 0 (a candidate loop here trips IREE's GPU reduction codegen)
%i_${x} = linalg.index ${dim} : index
%o_${x} = arith.constant 0 : index
%r_${x} = affine.apply affine_map<(i) -> (i + ${p_lo})>(%i_${x})

// fragment window_disjoint: an axis where windows do not overlap: the one window o that can hold i, tap offset r
%i_${x} = linalg.index ${dim} : index
%o_${x} = affine.apply affine_map<(i) -> ((i + ${p_lo}) floordiv ${s})>(%i_${x})
%r_${x} = affine.apply affine_map<(i) -> ((i + ${p_lo}) mod ${s})>(%i_${x})

// fragment window_bounds: o below the window count, r inside the dilated window
%o_${x}_size = arith.constant ${count} : index
%span_${x} = arith.constant ${span} : index
%o_${x}_lt = arith.cmpi slt, %o_${x}, %o_${x}_size : index
%r_${x}_lt = arith.cmpi slt, %r_${x}, %span_${x} : index

// fragment window_dilated: r a multiple of the dilation (a tap, not a gap between taps)
%dilation_${x} = arith.constant ${d} : index
%r_${x}_rem = arith.remui %r_${x}, %dilation_${x} : index
%r_${x}_tap = arith.cmpi eq, %r_${x}_rem, %c0 : index

// fragment avg_note: average pooling's contribution, for the header
// Average pooling: window o shares grad_out[n, c, o] equally among its taps,
//     grad_in[n, c, i] = sum over windows o holding i of grad_out[n, c, o] / divisor(o),
// with PyTorch's divisor: divisor_override, or the taps inside the padded input (count_include_pad; a ceil_mode
// window running past the padded end is clipped there), or the taps inside the input; with CK's window
// dilation, dilated taps are counted the same way. Per-axis tap counts are tables indexed by the window (the
// divisor is their product).

// fragment avg_override: (function level) the note when divisor_override is every window's divisor
// divisor_override: every window divides by ${divisor}

// fragment avg_uniform: (function level) no table: every window counts the same taps
// every window counts the same taps

// fragment avg_tables: (function level) the per-axis tap count tables
// Taps each window counts along the axes where windows differ (padding, ceil_mode); the divisor is their product
${tables}

// fragment avg_table: one axis's tap count, per window
%tap_counts_${x} = arith.constant dense<[${counts}]> : ${table_type}

// fragment avg_divisor: one divisor for every window
%divisor = arith.constant ${divisor} : f32

// fragment avg_divisor_product: window o's divisor: the uniform axes' count times the tables' counts
%divisor_uniform = arith.constant ${uniform} : f32
${reads}
${products}

// fragment avg_tap_count: window o's tap count along one axis, from its table
%divisor_${x} = tensor.extract %tap_counts_${x}[${window}] : ${table_type}

// fragment avg_multiply: one factor of the divisor's product
${result} = arith.mulf ${a}, ${b} : f32

// fragment avg_contribution: grad_out[o] / divisor(o) where window o holds i, else 0
${divisor}
%g = tensor.extract %grad_out[${window_indices}] : !grad_out
${g_to_f32}
%share = arith.divf ${g32}, %divisor : f32
%contribution = arith.select %in_window, %share, %zero : f32

// fragment max_note: max pooling's contribution, for the header
// Max pooling: the forward takes window o's maximum from x[n, c, indices[n, c, o]] (flat position h*W + w), so
//     grad_in[n, c, h, w] = sum over windows o with indices[n, c, o] == h*W + w of grad_out[n, c, o];
// gradients of overlapping windows that share an argmax add up.

// fragment max_relu: (function level) the backward of a ReLU before the pooling, applied to grad_out
// The ReLU before the pooling: the pooled input is its output r, and max(relu(x)) = relu(max(x)), so r at window
// o's argmax is the window's output %output[o]. The ReLU's backward (PyTorch's threshold_backward: zero where
// r <= 0, the gradient elsewhere; a NaN passes) is therefore grad_out's, zeroed where the output is <= 0, before
// it goes to the argmax.
%relu_zero = arith.constant 0.0 : ${element}
%relu_empty = tensor.empty() : !grad_out
%grad_out = linalg.generic {indexing_maps = [${map}, ${map}, ${map}], iterator_types = ${iterators}}
    ins(%grad_out_given, %output : !grad_out, !grad_out) outs(%relu_empty : !grad_out) {
^bb0(%g_given: ${element}, %pooled: ${element}, %unused_relu: ${element}):
  %relu_off = arith.cmpf ole, %pooled, %relu_zero : ${element}
  %g_relu = arith.select %relu_off, %relu_zero, %g_given : ${element}
  linalg.yield %g_relu : ${element}
} -> !grad_out

// fragment max_indices_types: the operand's type: the forward's indices
!argmax = ${indices_type}

// fragment max_indices: (function level) the argmax comes as the operand %indices
// indices: each window's argmax, from maxpool2d_fwd

// fragment max_x_types: the types of the forward's window scan, the operand x's among them
!argmax = ${indices_type}
!x = ${x_type}
!window_max = ${window_max_type}
!taps = ${taps_type}

// fragment max_x: (function level) the argmax %indices, recomputed from the operand %x by the forward's scan
// The argmax of every window, recomputed by the forward's scan (its own dispatch: the gather
// reads it with tensor.extract, which no producer fuses into).
%neg_inf = arith.constant ${neg_inf} : ${element}
%no_position = arith.constant ${no_position} : ${index_type}
%max_empty = tensor.empty() : !window_max
%argmax_empty = tensor.empty() : !argmax
${scan}

// fragment max_contribution: grad_out[o] where window o holds i and its argmax is i (h*W + w), else 0
%position = affine.apply affine_map<(h, w) -> (h * ${width} + w)>(%i_h, %i_w)
%position_i = arith.index_cast %position : index to ${index_type}
%g = tensor.extract %grad_out[${window_indices}] : !grad_out
%window_argmax = tensor.extract %indices[${window_indices}] : !argmax
%hit = arith.cmpi eq, %window_argmax, %position_i : ${index_type}
%routed = arith.andi %in_window, %hit : i1
${g_to_f32}
%contribution = arith.select %routed, ${g32}, %zero : f32
