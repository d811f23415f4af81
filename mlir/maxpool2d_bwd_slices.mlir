// Max-pool 2-D backward, layout ${layout}, by stride phases: grad_in from ${inputs}.
//
// Window o's tap f reads x at i = s*o + d*f - p_lo on each axis (taps in the padding are skipped), and the
// forward's argmax indices[n, c, o] is the flat position h*W + w of the tap that won, so
//     grad_in[n, c, i] = sum over taps f of windows o with s*o + d*f - p_lo = i and indices[n, c, o] == i of grad_out[n, c, o].
// Split each input axis into phases, position i = s*q + r (r < s): tap f reaches phase r = (d*f - p_lo) mod s,
// from window o = q - c with c = (d*f - p_lo - r) / s. So each phase is one elementwise pass over its rows q,
// reading grad_out and the indices at the fixed offset of each of its taps (slices of both, padded with zeros and
// -1, which no position equals): no tensor.extract, no scatter. Each phase writes its slot of a phase-major
// float32 accumulator acc[r.., n, .., q..] whole (a contiguous block IREE writes in place); one transposing pass
// puts the phases back in place, cast to ${element}: grad_in (rows past the input, where s does not divide it,
// are dropped).
// Phases: ${phase_count}; taps per phase: ${taps_per_phase}.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!grad_in = ${grad_in_type}
!acc = ${acc_type}
!slot = ${slot_type}
!windows_g = ${windows_g_type}
!slot_g = ${slot_g_type}
!windows_index = ${windows_index_type}
${source_types}

func.func @${function}(${grad_out_argument}: !grad_out${source_argument}${activation_argument}, %dst: !grad_in {iree.abi.output = 0 : index}${transients}) -> !grad_in {
  %zero_element = arith.constant 0.0 : ${element}
  %no_window = arith.constant -1 : ${index_type}
${prologue}
  %g_padded = tensor.pad %grad_out low[${window_pad_low}] high[${window_pad_high}] {
  ^bb0(${pad_indices}):
    tensor.yield %zero_element : ${element}
  } : !grad_out to !windows_g
  %argmax_padded = tensor.pad %indices low[${window_pad_low}] high[${window_pad_high}] {
  ^bb0(${pad_indices}):
    tensor.yield %no_window : ${index_type}
  } : !argmax to !windows_index
  %acc_empty = tensor.empty() : !acc
${phases}
${grid_destination}
  %grid = linalg.generic {indexing_maps = [${acc_read_map}, ${grid_identity}], iterator_types = ${transpose_iterators}}
      ins(${last} : !acc) outs(%grid_dst : ${grid_type}) {
  ^bb0(%a: f32, %unused_dst: ${element}):
${narrow}
    linalg.yield ${stored} : ${element}
  } -> ${grid_type}
${grad_in}
  return %grad_in : !grad_in
}

// fragment phase: phase ${p}'s slot: at each of its rows q, the taps' windows whose argmax is this position
${slices}
%slot${p}_empty = tensor.empty() : !slot
%slot${p} = linalg.generic {indexing_maps = [${maps}], iterator_types = ${grid_iterators}}
    ${ins}outs(%slot${p}_empty : !slot) {
^bb0(${block_args}%unused: f32):
  %sum_0 = arith.constant 0.0 : f32
${position}
${contributions}
  linalg.yield %sum_${taps} : f32
} -> !slot
%acc${p} = tensor.insert_slice %slot${p} into ${acc}[${slot_offsets}] [${slot_sizes}] [${slot_strides}] : !slot into !acc

// fragment tap_windows: a tap's windows o = q - c of its phase's rows q: its slices of grad_out and the indices
%g${p}${f} = tensor.extract_slice %g_padded[${offsets}] [${sizes}] [${strides}] : !windows_g to !slot_g
%argmax${p}${f} = tensor.extract_slice %argmax_padded[${offsets}] [${sizes}] [${strides}] : !windows_index to ${slot_index_type}

// fragment position: the flat input position h*W + w of row q in this phase: i = s*q + r on each axis
%q_h = linalg.index ${h_dim} : index
%q_w = linalg.index ${w_dim} : index
%position_index = affine.apply affine_map<(qh, qw) -> ((qh * ${s_h} + ${r_h}) * ${width} + qw * ${s_w} + ${r_w})>(%q_h, %q_w)
%position = arith.index_cast %position_index : index to ${index_type}

// fragment contribution: tap ${f}'s window adds its gradient where its argmax is this position
%hit${f} = arith.cmpi eq, %argmax${f}, %position : ${index_type}
${widen}
%added${f} = arith.addf %sum_${k}, ${g32} : f32
%sum_${next} = arith.select %hit${f}, %added${f}, %sum_${k} : f32

// fragment into_dst: (s divides every axis) the grid is grad_in's own memory, its axes split into (q, r)
  %grid_dst = tensor.expand_shape %dst ${reassociation} output_shape [${grid_shape}] : !grad_in into ${grid_type}

// fragment into_dst_result: grad_in, the grid with its axes merged back
  %grad_in = tensor.collapse_shape %grid ${reassociation} : ${grid_type} into !grad_in

// fragment into_rows: (s does not divide some axis) a grid of whole rows, whose rows past the input are dropped
  %grid_dst = tensor.empty() : ${grid_type}

// fragment into_rows_result: grad_in, the grid's rows inside the input
  %grid_rows = tensor.collapse_shape %grid ${reassociation} : ${grid_type} into ${rows_type}
  %grad_in = tensor.extract_slice %grid_rows[${zeros}] [${input_shape}] [${ones}] : ${rows_type} to !grad_in
