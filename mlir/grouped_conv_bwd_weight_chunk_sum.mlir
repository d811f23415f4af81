  // grad_w = sum over the ${batch_split} chunks (j, the last dim), still float32
  %acc_empty = tensor.empty() : !acc_flat
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc_flat) -> !acc_flat
  %acc = linalg.generic {indexing_maps = [${chunks_map}, ${chunks_out_map}], iterator_types = ${chunks_iterators}}
      ins(%partial_flat : !partial_flat) outs(%acc_zero : !acc_flat) {
  ^bb0(%p: f32, %sum: f32):
    %new_sum = arith.addf %sum, %p : f32
    linalg.yield %new_sum : f32
  } -> !acc_flat