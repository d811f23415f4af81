// Grouped convolution backward-weight (CK example 20_grouped_conv_bwd_weight) as the GEMM it is: ${rank}-D, layout
// ${layout}.
//
// With one tap (f = 0) and no padding, the identity s*o + d*f = i + p_lo reads x at i = s*o only. So x is first cut
// to the positions the outputs read (a strided slice; x itself when s = 1), and then
//     grad_w[g*K + k, c] = sum_{n, o} grad_out[n, o, g*K + k] * x_rows[n, o, g*C + c]      x_rows[n, o] = x[n, s*o]
// a matmul per group, grad_out's rows transposed (K x N*O) times x's (N*O x C), with a long reduction: here
// ${reduction_length} terms per weight element against ${outputs} weight elements.${gather_note}
// The reduction is split into J = ${chunks} chunks (free reshapes), J partial sums in parallel, then their sum:
//     partial[j, g, k, c] = sum_{r in chunk j} grad_out[r, g, k] * x_rows[r, g, c]
//     grad_w[g*K + k, c] = sum_j partial[j, g, k, c]
// Channels-last, r is the row (n, o) of the [N*O, G*C] and [N*O, G*K] matrices x and grad_out already are, and
// a chunk is ${chunk} consecutive rows; where N*O is not a whole number of ${block}-row blocks, both matrices get
// zero rows after their last (IREE's matrix pipelines read a reduction in whole blocks; a zero row adds nothing).
// Channels-first, the images hold (G*C) x O and (G*K) x O matrices: the chunks split the batch (${chunk} images
// each), and each sums over its images n and positions p.${segments_note}
// No index map has a stride or an offset: IREE's matmul pipelines take the contraction as it is.
//
// Problem: ${problem_name}

!x = ${x_type}
!grad_out = ${grad_out_type}
!grad_w = ${grad_w_type}
!x_rows = ${x_rows_type}
!x_chunks = ${x_chunks_type}
!grad_out_chunks = ${grad_out_chunks_type}
!partial = ${partial_type}
!partial_flat = ${partial_flat_type}
!acc = ${acc_type}

func.func @${function}(%x: !x, %grad_out: !grad_out, %dst: !grad_w {iree.abi.output = 0 : index}${transients}) -> !grad_w {
  %zero = arith.constant 0.0 : f32
${x_rows}
${x_chunks}
${grad_out_chunks}
  %partial_empty = tensor.empty() : !partial
  %partial_zero = linalg.fill ins(%zero : f32) outs(%partial_empty : !partial) -> !partial
  // partial[j, g, k, c] += grad_out[j, .., g, k] * x_rows[j, .., g, c] over the chunk's rows
  ${partial} = linalg.generic {indexing_maps = [${grad_out_map}, ${x_map}, ${partial_map}], iterator_types = ${iterators}}
      ins(%grad_out_chunks, %x_chunks : !grad_out_chunks, !x_chunks) outs(%partial_zero : !partial)${dispatch_config} {
  ^bb0(%gv: ${element}, %xv: ${element}, %sum: f32):
${to_accumulator}
${multiply_add}
    linalg.yield %new_sum : f32
  } -> !partial
  // the sum of the J partial sums (j, the last dim), still float32, over (G*K, C)
${flatten}
  %acc_empty = tensor.empty() : !acc
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc) -> !acc
  %acc = linalg.generic {indexing_maps = [${chunks_map}, ${chunks_out_map}], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%partial_flat : !partial_flat) outs(%acc_zero : !acc) {
  ^bb0(%p: f32, %total: f32):
    %new_total = arith.addf %total, %p : f32
    linalg.yield %new_total : f32
  } -> !acc
${acc_as_weight}
  %grad_w = linalg.generic {indexing_maps = [${acc_map}, ${store_map}], iterator_types = ${store_iterators}}
      ins(%acc_weight : ${acc_weight_type}) outs(%dst : !grad_w) {
  ^bb0(%a: f32, %unused: ${out_element}):
${narrow}
    linalg.yield ${stored} : ${out_element}
  } -> !grad_w
  return %grad_w : !grad_w
}

// fragment gather: x's windows as columns (im2col), the gathered form's x_rows: one column per (tap, channel)
  // x_rows[${rows_dims}] = x_padded[${read_dims}]: the input position s*o + d*f - p_lo, zero in the padding
${pad}
  %x_rows_empty = tensor.empty() : !x_rows
  %x_rows = linalg.generic {indexing_maps = [${read_map}, ${rows_map}], iterator_types = ${iterators}}
      ins(${padded} : ${padded_type}) outs(%x_rows_empty : !x_rows)${copy_attrs} {
  ^bb0(%xv: ${element}, %unused: ${element}):
    linalg.yield %xv : ${element}
  } -> !x_rows
