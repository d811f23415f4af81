  // Phase ${index}: taps f = ${tap_description}; fills grad_in positions ${rows_description}.
  %w_${index}_empty = tensor.empty() : ${phase_filter_type}
  %w_${index} = linalg.generic {indexing_maps = [${phase_filter_map}], iterator_types = ${phase_filter_iterators}}
      outs(%w_${index}_empty : ${phase_filter_type}) {
  ^bb0(%unused: ${element}):
${tap_indices}
    %tap = tensor.extract %weight[${weight_indices}] : !weight
    linalg.yield %tap : ${element}
  } -> ${phase_filter_type}
${grad_out_window}
  %out_${index}_empty = tensor.empty() : ${phase_out_type}
  %out_${index}_zero = linalg.fill ins(%zero : f32) outs(%out_${index}_empty : ${phase_out_type}) -> ${phase_out_type}
  %out_${index} = linalg.${conv_op} {dilations = ${sub_dilations}, strides = ${unit_strides}${dispatch_config}}
      ins(${grad_out_window_value}, %w_${index} : ${phase_in_type}, ${phase_filter_type}) outs(%out_${index}_zero : ${phase_out_type}) -> ${phase_out_type}
  %acc_${next} = tensor.insert_slice %out_${index} into %acc_${index}[${insert_offsets}] [${insert_sizes}] [${insert_strides}] : ${phase_out_type} into !acc
