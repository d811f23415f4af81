  %acc_${index} = linalg.${conv_op} {dilations = ${sub_dilations}, strides = ${unit_strides}${dispatch_config}}
      ins(${window}, %w_${index} : ${window_type}, ${filter_type}) outs(%acc_${index}_zero : ${acc_type}) -> ${acc_type}
