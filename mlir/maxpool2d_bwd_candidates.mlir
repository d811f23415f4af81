// Max-pool 2-D backward, layout ${layout}, in one pass over grad_in: grad_in from ${inputs}.
//
// As in maxpool2d_bwd_slices.mlir, split each input axis into phases, position i = s*q + r (r < s); tap f of
// window o reaches row q of phase r = (d*f - p_lo) mod s from window o = q - c, c = floor((d*f - p_lo) / s). Here
// grad_in's grid (q, r) is one elementwise pass: at each position, the windows q - c for every distinct shift c of
// the taps (whatever r is) are its candidates, and a candidate adds its gradient where its argmax is this position:
//     grad_in[n, c, i] = sum over candidate windows o of i with indices[n, c, o] == i of grad_out[n, c, o].
// The forward's argmax of a window is one of that window's own taps, so a candidate that does not cover position i
// (another phase's shift, or a dilation's gap) never names it: the sum is exact, with no tap test. Each position
// sums its windows in the forward's scan order (window rows, then columns: PyTorch's order of adds). grad_out and
// the indices are padded once (zeros and -1, which no position equals) for the candidates past either end; the
// candidates are slices of them (no tensor.extract, no scatter), and no float32 accumulator is kept.
// Candidates: ${candidates} (shifts per axis: ${shifts}).
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!grad_in = ${grad_in_type}
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
${slices}
${grid_destination}
  %grid = linalg.generic {indexing_maps = [${maps}], iterator_types = ${iterators}}
      ins(${ins} : ${types}) outs(%grid_dst : ${grid_type}) {
  ^bb0(${block_args}%unused: ${element}):
    %sum_0 = arith.constant 0.0 : f32
${position}
${contributions}
${narrow}
    linalg.yield ${stored} : ${element}
  } -> ${grid_type}
${grad_in}
  return %grad_in : !grad_in
}

// fragment candidate_windows: candidate ${k}'s windows q - c of every grid row: its slices of grad_out and the indices
%windows_g_${k} = tensor.extract_slice %g_padded[${offsets}] [${sizes}] [${strides}] : !windows_g to !slot_g
%windows_argmax_${k} = tensor.extract_slice %argmax_padded[${offsets}] [${sizes}] [${strides}] : !windows_index to ${slot_index_type}

// fragment position: the flat input position h*W + w of this grid position: i = s*q + r on each axis
%q_h = linalg.index ${q_h} : index
%r_h = linalg.index ${r_h} : index
%q_w = linalg.index ${q_w} : index
%r_w = linalg.index ${r_w} : index
%position_index = affine.apply affine_map<(qh, rh, qw, rw) -> ((qh * ${s_h} + rh) * ${width} + qw * ${s_w} + rw)>(%q_h, %r_h, %q_w, %r_w)
%position = arith.index_cast %position_index : index to ${index_type}
