// Max-pool 2-D forward with PyTorch's indices, layout ${layout}.
//
// Per spatial axis (s stride, d dilation, p_lo low padding), window o reads the taps
//     i = s*o + d*f - p_lo,   f < k,   skipping taps outside the input (in the padding).
// y[n, c, o] is the window's maximum and indices[n, c, o] its flat position h*W + w inside the (n, c) plane,
// as torch.nn.functional.max_pool2d(..., return_indices=True) gives them.
//
// One linalg.generic: the output grid (in the layout's order, so channels-first needs no transpose) is
// parallel, the window taps are reduction dims sized by the shape-only operand !taps. The tap position is
// computed in the body from linalg.index values (an indexing map with the negative -p_lo would break
// llvm-cpu tiling) and the tensor.extract index is clamped into the input even for skipped taps.
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
  %v_nan = arith.cmpf uno, %v, %v : ${element}
  %best_nan = arith.cmpf uno, %best, %best : ${element}
  %best_number = arith.xori %best_nan, %true : i1
  %greater = arith.cmpf ogt, %v, %best : ${element}
  %equal = arith.cmpf oeq, %v, %best : ${element}
  %earlier = arith.cmpi slt, %position, %best_position : ${index_type}
  %later = arith.cmpi sgt, %position, %best_position : ${index_type}
  %tie_earlier = arith.andi %equal, %earlier : i1
  %number_wins = arith.ori %greater, %tie_earlier : i1
  %nan_beats = arith.ori %best_number, %later : i1
  %nan_wins = arith.andi %v_nan, %nan_beats : i1
  %wins = arith.ori %number_wins, %nan_wins : i1
  %take = arith.andi %inside, %wins : i1
  %new_best = arith.select %take, %v, %best : ${element}
  %new_position = arith.select %take, %position, %best_position : ${index_type}
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
