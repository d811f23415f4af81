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
${tap_positions}
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
