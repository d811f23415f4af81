// Max-pool 2-D forward with PyTorch's indices, layout ${layout}.
//
// Per spatial axis (s stride, d dilation, p_lo low padding), window o reads the taps
//     i = s*o + d*f - p_lo,   f < k,   skipping taps outside the input (in the padding).
// y[n, c, o] is the window's maximum and indices[n, c, o] its flat position h*W + w inside the (n, c) plane,
// as torch.nn.functional.max_pool2d(..., return_indices=True) gives them.
//
${form_note}
//
// Problem: ${problem_name}

!x = ${x_type}
!window_max = ${y_type}
!argmax = ${indices_type}
!taps = ${taps_type}

func.func @${function}(%x: !x, %y_dst: !window_max {iree.abi.output = 0 : index}, %indices_dst: !argmax {iree.abi.output = 1 : index}${transients}) -> (!window_max, !argmax) {
  %neg_inf = arith.constant ${neg_inf} : ${element}
  %no_position = arith.constant ${no_position} : ${index_type}
${scan}
  return %max, %indices : !window_max, !argmax
}

// fragment scan: each window's maximum and its flat position, as PyTorch finds them (%max, %indices)
// Window scan: for every window o and tap f, x[i] with i = s*o + d*f - p_lo (taps in the padding are skipped).
// PyTorch's scan keeps the first maximum and the last NaN ("update if v > max or v is NaN"). Written as a
// comparison of (value, position) pairs, with position = h*W + w growing in scan order, that rule is a
// total order, so the reduction gives PyTorch's answer in whatever order the compiler visits the taps:
//   a NaN beats a number; of two NaNs the later wins; of two numbers the greater wins, on a tie the earlier.
// The scan starts from (-inf, H*W): the first tap inside the input always beats it.
%max_init = linalg.fill ins(%neg_inf : ${element}) outs(${max_destination} : !window_max) -> !window_max
%argmax_init = linalg.fill ins(%no_position : ${index_type}) outs(${argmax_destination} : !argmax) -> !argmax
%taps = tensor.empty() : !taps
%max, %indices = linalg.generic {indexing_maps = [${taps_map}, ${grid_map}, ${grid_map}], iterator_types = ${scan_iterators}}
    ins(%taps : !taps) outs(%max_init, %argmax_init : !window_max, !argmax) {
^bb0(%unused: i8, %best: ${element}, %best_position: ${index_type}):
  %true = arith.constant true
  %n = linalg.index ${batch_dim} : index
  %c = linalg.index ${channel_dim} : index
  %c0 = arith.constant 0 : index
${taps}
  %inside = arith.andi %inside_h, %inside_w : i1
  %position_index = affine.apply affine_map<(h, w) -> (h * ${width} + w)>(%i_h_clamped, %i_w_clamped)
  %position = arith.index_cast %position_index : index to ${index_type}
  %v = tensor.extract %x[${x_indices}] : !x
${pick}
  linalg.yield %new_best, %new_position : ${element}, ${index_type}
} -> (!window_max, !argmax)

// fragment tap: one axis's tap position i = s*o + d*f - p_lo of window o and tap f, and whether it lies inside the input
%o_${x} = linalg.index ${window_dim} : index
%f_${x} = linalg.index ${tap_dim} : index
%i_${x} = affine.apply affine_map<(o, f) -> (o * ${s} + f * ${d} - ${p_lo})>(%o_${x}, %f_${x})
%i_${x}_size = arith.constant ${size} : index
%i_${x}_ge = arith.cmpi sge, %i_${x}, %c0 : index
%i_${x}_lt = arith.cmpi slt, %i_${x}, %i_${x}_size : index
%inside_${x} = arith.andi %i_${x}_ge, %i_${x}_lt : i1

// fragment pick: tap value ${v} at ${position} (inside the input when ${inside}) against the best so far: (${new_best}, ${new_position})
${v}_nan = arith.cmpf uno, ${v}, ${v} : ${element}
${best}_nan = arith.cmpf uno, ${best}, ${best} : ${element}
${best}_number = arith.xori ${best}_nan, %true : i1
%greater${t} = arith.cmpf ogt, ${v}, ${best} : ${element}
%equal${t} = arith.cmpf oeq, ${v}, ${best} : ${element}
%earlier${t} = arith.cmpi slt, ${position}, ${best_position} : ${index_type}
%later${t} = arith.cmpi sgt, ${position}, ${best_position} : ${index_type}
%tie_earlier${t} = arith.andi %equal${t}, %earlier${t} : i1
%number_wins${t} = arith.ori %greater${t}, %tie_earlier${t} : i1
%nan_beats${t} = arith.ori ${best}_number, %later${t} : i1
%nan_wins${t} = arith.andi ${v}_nan, %nan_beats${t} : i1
%wins${t} = arith.ori %number_wins${t}, %nan_wins${t} : i1
%take${t} = arith.andi ${inside}, %wins${t} : i1
${new_best} = arith.select %take${t}, ${v}, ${best} : ${element}
${new_position} = arith.select %take${t}, ${position}, ${best_position} : ${index_type}

// fragment pick_in_order: tap ${t}, value ${v} at ${position} (inside the input when ${inside}), in scan order,
// as PyTorch's loop picks it: the window's first tap inside the input is taken whatever its value (PyTorch's scan
// starts from -inf at that tap's position), a later one when v > best or v is NaN, so the first maximum or the
// last NaN wins; ${taken}: whether a tap inside the input came before. The taps come in scan order here, so this
// gives the order-free pick's answer with no position comparisons.
${v}_nan = arith.cmpf uno, ${v}, ${v} : ${element}
%greater${t} = arith.cmpf ogt, ${v}, ${best} : ${element}
%first${t} = arith.xori ${taken}, %true : i1
%greater_or_nan${t} = arith.ori %greater${t}, ${v}_nan : i1
%wins${t} = arith.ori %greater_or_nan${t}, %first${t} : i1
%take${t} = arith.andi ${inside}, %wins${t} : i1
${new_best} = arith.select %take${t}, ${v}, ${best} : ${element}
${new_position} = arith.select %take${t}, ${position}, ${best_position} : ${index_type}
%taken${t} = arith.ori ${taken}, ${inside} : i1

// fragment tap_scan: the same scan over slices: the input padded once (with -inf; padded taps are masked all the
// same), one slice per tap, read by identity maps, the taps picked in scan order in the body (no tensor.extract:
// the llvm-cpu backend vectorizes it along the innermost grid axis), each as PyTorch's loop picks it (pick_in_order)
${padded}
${slices}
%max, %indices = linalg.generic {indexing_maps = [${tap_maps}], iterator_types = ${grid_iterators}}
    ins(${tap_values} : ${tap_types}) outs(${max_destination}, ${argmax_destination} : !window_max, !argmax) {
^bb0(${tap_arguments}, %unused_max: ${element}, %unused_position: ${index_type}):
  %true = arith.constant true
  %best = arith.constant ${neg_inf} : ${element}
  %best_position = arith.constant ${no_position} : ${index_type}
  %taken = arith.constant false
  %c0 = arith.constant 0 : index
${axes}
${picks}
  linalg.yield ${last_best}, ${last_position} : ${element}, ${index_type}
} -> (!window_max, !argmax)

// fragment gather_scan: the same scan in one elementwise pass over the windows, with no padded copy
// Each tap is read by tensor.extract at its position clamped into the input (a tap in the padding is masked all the
// same) and picked in scan order (pick_in_order). With no reduction dims, each window's best stays in registers:
// the extract form's reduction over the taps reloaded and stored both outputs at every row of taps (IREE 3.13, CUDA).
%max, %indices = linalg.generic {indexing_maps = [${grid_maps}], iterator_types = ${grid_iterators}}
    outs(${max_destination}, ${argmax_destination} : !window_max, !argmax) {
^bb0(%unused_max: ${element}, %unused_position: ${index_type}):
  %true = arith.constant true
  %best = arith.constant ${neg_inf} : ${element}
  %best_position = arith.constant ${no_position} : ${index_type}
  %taken = arith.constant false
  %c0 = arith.constant 0 : index
  %n = linalg.index ${batch_dim} : index
  %c = linalg.index ${channel_dim} : index
${axes}
${picks}
  linalg.yield ${last_best}, ${last_position} : ${element}, ${index_type}
} -> (!window_max, !argmax)

// fragment tap_read: tap ${t}'s value, read at its position clamped into the input
%v${t} = tensor.extract %x[${indices}] : !x

// fragment tap_axis: tap f's position i = s*o + d*f - p_lo along one axis, and whether it lies inside the input
%i_${x}${f} = affine.apply affine_map<(o) -> (o * ${s} ${offset})>(%o_${x})
%i_${x}${f}_ge = arith.cmpi sge, %i_${x}${f}, %c0 : index
%i_${x}${f}_lt = arith.cmpi slt, %i_${x}${f}, %i_${x}_size : index
%inside_${x}${f} = arith.andi %i_${x}${f}_ge, %i_${x}${f}_lt : i1

// fragment tap_position: tap ${t}'s flat position h*W + w and whether both axes lie inside the input
%inside${t} = arith.andi %inside_h${fh}, %inside_w${fw} : i1
%position${t}_index = affine.apply affine_map<(h, w) -> (h * ${width} + w)>(%i_h${fh}, %i_w${fw})
%position${t} = arith.index_cast %position${t}_index : index to ${index_type}

// fragment tap_window: window o along one axis, and the input's size there
%o_${x} = linalg.index ${window_dim} : index
%i_${x}_size = arith.constant ${size} : index

// fragment extract_note: the header's note on the extract form
// One linalg.generic: the output grid (in the layout's order, so channels-first needs no transpose) is
// parallel, the window taps are reduction dims sized by the shape-only operand !taps. The tap position is
// computed in the body from linalg.index values (an indexing map with the negative -p_lo would break
// llvm-cpu tiling) and the tensor.extract index is clamped into the input even for skipped taps.

// fragment gather_note: the header's note on the gather form
// The gather form: one elementwise linalg.generic over the output grid (in the layout's order), each window's taps
// read by tensor.extract at positions clamped into the input and picked in scan order; see the scan below.

// fragment slices_note: the header's note on the slices form
// The slices form: the taps as strided slices of the input padded once, picked in scan order by one
// elementwise linalg.generic over the output grid (in the layout's order); see the scan below.

// fragment phases_note: the header's note on the phases form
// The phases form: the taps as slices of the input split by stride phase along W and padded once (one
// transposing pass), picked in scan order by one elementwise linalg.generic over the output grid; see the scan
// below.
