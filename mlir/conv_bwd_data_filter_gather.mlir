  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_${index} = linalg.generic {indexing_maps = [${phase_filter_map}], iterator_types = ${phase_filter_iterators}}
      outs(%w_${index}_empty : ${phase_filter_type}) {
  ^bb0(%unused: ${element}):
${tap_indices}
    %tap = tensor.extract ${weight_view}[${weight_indices}] : ${weight_view_type}
${zero_tap_select}
    linalg.yield ${tap_value} : ${element}
  } -> ${phase_filter_type}
