// Average-pool 3-D forward${title_relu}, layout ${layout}.
//
// Per spatial axis (s stride, d dilation, p_lo low padding), window o reads the taps
//     i = s*o + d*f - p_lo,   f < k,
// and taps in the padding read 0. As torch.nn.functional.avg_pool3d gives it,
//     y[n, c, o] = (sum of window o's taps${summand}) / divisor(o),
// the sum in float32 in PyTorch's scan order (d, then h, then w) and one division, by PyTorch's divisor:
// divisor_override, or the taps inside the padded input (count_include_pad; a ceil_mode window running past the
// padded end is clipped there), or the taps inside the input; CK's window dilation counts dilated taps the same way.
//
${form_note}
//
// Problem: ${problem_name}

!x = ${x_type}
!y = ${y_type}

func.func @${function}(%x: !x, %y_dst: !y {iree.abi.output = 0 : index}${transients}) -> !y {
  %zero = arith.constant 0.0 : ${element}
${tables}
${padded}
${slices}
  %y = linalg.generic {indexing_maps = [${maps}], iterator_types = ${iterators}}
      ins(${tap_values} : ${tap_types}) outs(%y_dst : !y) {
  ^bb0(${tap_arguments}, %unused: ${element}):
    %sum = arith.constant 0.0 : f32
${windows}
${taps}
${divisor}
    %mean = arith.divf ${last_sum}, %divisor : f32
${narrow}
    linalg.yield ${mean_out} : ${element}
  } -> !y
  return %y : !y
}

// fragment add: ${result} = ${sum} + ${value}
${result} = arith.addf ${sum}, ${value} : f32

// fragment window: window o along one axis (where windows count different taps, the index of its divisor table)
%o_${x} = linalg.index ${dim} : index

// fragment slices_note: the header's note on the slices form
// The slices form: the taps as strided slices of the input padded once (pool_taps.mlir), summed in scan order by
// one elementwise linalg.generic over the output grid (in the layout's order).

// fragment phases_note: the header's note on the phases form
// The phases form: the taps as slices of the input split by stride phase along W and padded once (one transposing
// pass, pool_taps.mlir), unit-stride along W's windows, summed in scan order by one elementwise linalg.generic over
// the output grid.
