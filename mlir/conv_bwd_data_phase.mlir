  // Phase ${index}: taps f = ${tap_description}; writes grad_in positions ${rows_description}.
  %w_${index}_empty = tensor.empty() : ${phase_filter_type}
${phase_filter}
${grad_out_window}
  %acc_${index}_empty = tensor.empty() : ${acc_type}
  %acc_${index}_zero = linalg.fill ins(%zero : f32) outs(%acc_${index}_empty : ${acc_type}) -> ${acc_type}
${convolution}
${d_views}
  %store_${index}_empty = tensor.empty() : ${store_type}
  %store_${index} = linalg.generic {indexing_maps = [${store_maps}], iterator_types = ${store_iterators}}
      ins(%acc_${index}${d_operands} : ${acc_type}${d_types}) outs(%store_${index}_empty : ${store_type}) {
  ^bb0(%acc: f32${d_block_args}, %unused: ${element}):
${store_body}
  } -> ${store_type}
  %stored_${index} = tensor.collapse_shape %store_${index} ${reassociation} : ${store_type} into ${stored_type}
  %grad_in_${next} = tensor.insert_slice %stored_${index} into ${into}[${insert_offsets}] [${insert_sizes}] [${insert_strides}] : ${stored_type} into !grad_in
