  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_${index} = linalg.generic {indexing_maps = [${weight_map}, ${phase_filter_map}], iterator_types = ${phase_filter_iterators}}
      ins(${weight_view} : ${weight_view_type}) outs(%w_${index}_empty : ${phase_filter_type}) {
  ^bb0(%tap: ${element}, %unused: ${element}):
    linalg.yield %tap : ${element}
  } -> ${phase_filter_type}
