  // grouped: acc[n, m, g, c] += window[n, m + dilation*u, g, k] * w[g, u, k, c]
  %window_${index}_groups = tensor.expand_shape ${window} ${reassociation} output_shape [${grouped_window_shape}] : ${window_type} into ${grouped_window_type}
  %acc_${index} = linalg.generic {indexing_maps = [${window_map}, ${filter_map}, ${acc_map}], iterator_types = ${iterators}}
      ins(%window_${index}_groups, %w_${index} : ${grouped_window_type}, ${filter_type}) outs(%acc_${index}_zero : ${acc_type})${dispatch_config} {
  ^bb0(%x: ${element}, %w: ${element}, %a: f32):
${extend}
    %product = arith.mulf ${x}, ${w} : f32
    %sum = arith.addf %a, %product : f32
    linalg.yield %sum : f32
  } -> ${acc_type}
