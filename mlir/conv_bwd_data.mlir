// Convolution backward-data (CK examples 17_convnd_bwd_data and 38_grouped_conv_bwd_data_multiple_d),
// ${rank}-D, layout ${layout}, ${groups} group(s), epilogue: ${epilogue}.
//
// The forward convolution, per spatial axis (s stride, d dilation, p_lo low padding), per group g:
//     out[n, o, g, k] = sum_{f, c} in[n, i, g, c] * w[g, k, f, c]      where   s*o + d*f = i + p_lo
// Backward-data is that identity read from the input side: every input position i sums
// grad_out[n, o, g, k] * w[g, k, f, c] over the (o, f, k) that land on it.
//
// Stride phases (CK's YTilde = s / gcd(s, d)): the taps f = f0 + (s/g)*t of phase f0 land exactly on
// the input positions i = s*m + r - p_lo, where d*f0 = r + s*q, with o = m - q - (d/g)*t. So phase f0 is a
// stride-1 convolution, dilation d/g, of the zero-padded output gradient with its taps flipped (u = T-1-t):
//     acc[n, m, g, c] = sum_{u, k} grad_out_padded[n, m' + (d/g)*u, g, k] * w_phase[g, u, k, c]
// No multiply-add touches an inserted zero. Each phase's accumulator (float32) goes through the epilogue
// grad_in = f(acc, d0, d1, ...) and the cast to ${element} in the dispatch that computes it, and is inserted
// with stride s into grad_in: every position is written once, by the phase that reaches it. Positions no
// phase reaches get f(0, d0, ...) (zero without an epilogue). Stride 1 has a single phase: the padded
// output gradient convolved with the flipped filter.
//
// The interleaved store (the GPU targets, channels-last, stride > 1): IREE 3.13 makes each strided insert a
// copy dispatch at a tenth of copy bandwidth (IREE issue 23976). Instead each phase writes its rows whole into
// its own slot of a phase-major tensor, slots[i mod s][n, i floordiv s, c] (a contiguous insert IREE writes in
// place; the float32 accumulator when there is an epilogue, else the cast value), and one linalg.generic
// interleaves the slots into grad_in, through the epilogue: each grad_in position is written once, each slot
// read once. Residues no phase reaches read a zero slot, so they get f(0, d0, ...) too.
//
// Each phase's filter is gathered from the weight (flip and transpose) by a small linalg.generic: indexing
// maps stay free of negative coefficients, which llvm-cpu's tiling cannot take.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!weight = ${weight_type}
!grad_in = ${grad_in_type}
!grad_out_cl = ${grad_out_cl_type}
${extra_aliases}
func.func @${function}(%grad_out: !grad_out, %weight: !weight${extra_arguments}, %dst: !grad_in {iree.abi.output = 0 : index}${transients}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : ${operand}
${grad_out_to_channels_last}
${weight_view}
${d_views}
${initial}
${phases}
  return ${result} : !grad_in
}

// fragment phase: one stride phase, from its taps to its positions of grad_in
  // Phase ${index}: taps f = ${tap_description}; writes grad_in positions ${rows_description}.
${phase_filter}
${grad_out_window}
  %acc_${index}_empty = tensor.empty() : ${acc_type}
  %acc_${index}_zero = linalg.fill ins(%zero : f32) outs(%acc_${index}_empty : ${acc_type}) -> ${acc_type}
${convolution}
${d_views}
  %store_${index}_empty = tensor.empty() : ${store_type}
  %store_${index} = linalg.generic {indexing_maps = [${store_maps}], iterator_types = ${store_iterators}}
      ins(%acc_${index}${d_operands} : ${acc_type}${d_types}) outs(%store_${index}_empty : ${store_type}) {
  ^bb0(%acc: f32${d_block_args}, %unused: ${store_element}):
${store_body}
    linalg.yield ${stored} : ${store_element}
  } -> ${store_type}
  %stored_${index} = tensor.collapse_shape %store_${index} ${reassociation} : ${store_type} into ${stored_type}
  ${inserted} = tensor.insert_slice %stored_${index} into ${into}[${insert_offsets}] [${insert_sizes}] [${insert_strides}] : ${stored_type} into ${into_type}

// fragment channels_last: the phases read grad_out channels-last
  %grad_out_cl_empty = tensor.empty() : !grad_out_cl
  %grad_out_cl = linalg.transpose ins(%grad_out : !grad_out) outs(%grad_out_cl_empty : !grad_out_cl) permutation = [${permutation}]

// fragment filter_flip: the phase's filter through an indexing map (GPU targets)
  %w_${index}_empty = tensor.empty() : ${phase_filter_type}
  // the phase's taps, flipped (u = T-1-t): a copy through an indexing map (f = first + step*(T-1) - step*u);
  // the GPU targets take the negative coefficient, and it spares them a gather (whose vectorized index
  // arithmetic IREE 3.13's NVPTX backend cannot select)
  %w_${index} = linalg.generic {indexing_maps = [${weight_map}, ${phase_filter_map}], iterator_types = ${phase_filter_iterators}}
      ins(${weight_view} : ${weight_view_type}) outs(%w_${index}_empty : ${phase_filter_type})${copy_attrs} {
  ^bb0(%tap: ${element}, %unused: ${element}):
    linalg.yield %tap : ${element}
  } -> ${phase_filter_type}

// fragment filter_gather: the phase's filter by index arithmetic (every target)
  %w_${index}_empty = tensor.empty() : ${phase_filter_type}
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

// fragment weight_taps: the weight with its taps first, (G.., F.., K, C): the planes flip's source (one transpose)
  %weight_taps_empty = tensor.empty() : ${taps_type}
  %weight_taps = linalg.transpose ins(${weight_view} : ${weight_view_type}) outs(%weight_taps_empty : ${taps_type}) permutation = [${permutation}]

// fragment filter_planes: the phase's filter plane by plane (the planes flip)
  // the phase's taps, flipped (u = T-1-t), plane by plane: each a (G.., K, C) slice of the weight's taps-first
  // transpose at its flipped tap, copied where the gather reads the weight an element at a time
  %w_${index}_empty = tensor.empty() : ${phase_filter_type}
${zeroed}${planes}

// fragment filter_plane: one plane (u..) of the phase's filter: tap f.. of the weight
  %w_${index}_tap_${plane} = tensor.extract_slice %weight_taps[${tap_offsets}] [${plane_sizes}] [${unit_strides}] : ${taps_type} to ${plane_type}
  ${result} = tensor.insert_slice %w_${index}_tap_${plane} into ${into}[${plane_offsets}] [${plane_sizes}] [${unit_strides}] : ${plane_type} into ${phase_filter_type}

// fragment filter_zeroed: the zero taps' planes (u >= taps) are zeros: the planes go into a zero-filled filter
  %w_${index}_zeros = linalg.fill ins(%zero_element : ${element}) outs(%w_${index}_empty : ${phase_filter_type}) -> ${phase_filter_type}

// fragment gather_index: a loop index of the gather
    ${result} = linalg.index ${dim} : index

// fragment gather_zero_index: the index 0, for zero taps' clamped reads
    %c0_index = arith.constant 0 : index

// fragment gather_zero_taps: u >= taps are zero taps: read a real tap (u clamped to 0), select zero for them
    %real_taps${axis} = arith.constant ${taps} : index
    %real${axis} = arith.cmpi ult, %u${axis}, %real_taps${axis} : index
    %u${axis}_clamped = arith.select %real${axis}, %u${axis}, %c0_index : index

// fragment gather_tap: u = taps-1-t reads tap f = first_tap + tap_step*t = flipped_first_tap - tap_step*u
    %f${axis} = affine.apply affine_map<(u) -> (${flipped_first_tap} - u * ${tap_step})>(${u})

// fragment gather_select: a zero for the zero taps
    %tap_or_zero = arith.select ${real}, %tap, %zero_element : ${element}

// fragment no_phase_filter: the taps form reads the weight's planes at their taps itself
  // no phase filter: the taps form reads each (g, c) plane of the weight at its flipped tap

// fragment named: the phase's convolution, one group: a named op
  %acc_${index} = linalg.${conv_op} {dilations = ${sub_dilations}, strides = ${unit_strides}${dispatch_config}}
      ins(${window}, %w_${index} : ${window_type}, ${filter_type}) outs(%acc_${index}_zero : ${acc_type}) -> ${acc_type}

// fragment grouped: the phase's convolution, several groups: a linalg.generic
  // grouped: acc[n, m, g, c] += window[n, m + dilation*u, g, k] * w[g, u, k, c]
${contraction}

// fragment dense_tuned: the phase's convolution, one group, tuned, some axes of one tap: a linalg.generic without them
  // acc[n, m, c] += window[n, m + dilation*u, k] * w[u, k, c], u over the axes of more than one tap: IREE rebuilds a
  // convolution without its single-tap axes, and the rebuilt op loses its compilation_info; written so, it keeps it
  %w_${index}_taps = tensor.collapse_shape %w_${index} ${filter_reassociation} : ${phase_filter_type} into ${filter_type}
${contraction}

// fragment generic_contraction: the body of the generic convolutions: f32 multiply-adds
  %acc_${index} = linalg.generic {indexing_maps = [${window_map}, ${filter_map}, ${acc_map}], iterator_types = ${iterators}}
      ins(${window}, ${filter} : ${grouped_window_type}, ${filter_type}) outs(%acc_${index}_zero : ${acc_type})${dispatch_config} {
  ^bb0(%x: ${element}, %w: ${element}, %a: f32):
${extend}
${multiply_add}
    linalg.yield %sum : f32
  } -> ${acc_type}

// fragment depthwise: the phase's convolution, one channel per group (depthwise, K = C = 1): a named op, groups as channels
  // depthwise: acc[n, m, g] += window[n, m + dilation*u, g] * w[u, g]; IREE's CPU backend gives the named op its
  // convolution pipeline, vectorized over the groups. The phase's filter (G, U.., 1, 1) is turned to (U.., G)
  // first: G * taps elements.
  %w_${index}_taps = tensor.collapse_shape %w_${index} ${filter_reassociation} : ${filter_type} into ${filter_taps_type}
  %w_${index}_hwc_empty = tensor.empty() : ${filter_hwc_type}
  %w_${index}_hwc = linalg.transpose ins(%w_${index}_taps : ${filter_taps_type}) outs(%w_${index}_hwc_empty : ${filter_hwc_type}) permutation = [${filter_permutation}]
  %acc_${index} = linalg.${conv_op} {dilations = ${sub_dilations}, strides = ${unit_strides}${dispatch_config}}
      ins(${window}, %w_${index}_hwc : ${window_type}, ${filter_hwc_type}) outs(%acc_${index}_zero : ${acc_type}) -> ${acc_type}

// fragment depthwise_tuned: the depthwise phase's convolution, tuned, some axes of one tap: a linalg.generic without them
  // acc[n, m, g] += window[n, m + dilation*u, g] * w[u, g], u over the axes of more than one tap (as dense_tuned:
  // IREE rebuilds the named op without its single-tap axes and loses its compilation_info)
  %w_${index}_taps = tensor.collapse_shape %w_${index} ${filter_reassociation} : ${filter_type} into ${filter_taps_type}
  %w_${index}_hwc_empty = tensor.empty() : ${filter_hwc_type}
  %w_${index}_hwc = linalg.transpose ins(%w_${index}_taps : ${filter_taps_type}) outs(%w_${index}_hwc_empty : ${filter_hwc_type}) permutation = [${filter_permutation}]
  %w_${index}_kept = tensor.collapse_shape %w_${index}_hwc ${kept_reassociation} : ${filter_hwc_type} into ${filter_kept_type}
${contraction}

// fragment taps: the phase's convolution, channels-first, few multiply-adds per element: one elementwise generic
  // taps: acc[n, g, c, m] = sum_{k, u} window[n, g, k, m + dilation*u] * w[g, u, k, c], the sum written out term by
  // term (${terms} here): one operand per (k, u), a row of the window (a slice: m itself indexes it) and the weight's
  // (g, c) plane at the tap u reads (a constant: no gathered phase filter). Every indexing map is a projected
  // permutation and the last spatial axis is contiguous in all of them, so IREE's CPU backend vectorizes along it.
  // The im2col form, whose matmuls have C columns, ran 2.4-2.7x slower on train.py's grouped layers, and the grouped
  // convolution-form generic slower still (docs/perf/cpu-step/taps/forms_ab.txt).
${slices}
  %acc_${index} = linalg.generic {indexing_maps = [${maps}], iterator_types = ${iterators}}
      ins(${operands} : ${operand_types}) outs(%acc_${index}_empty : ${acc_type}) {
  ^bb0(${block_args}, %unused: f32):
${body}
    linalg.yield ${result} : f32
  } -> ${acc_type}

// fragment taps_operands: the taps form's operands of one (k, u): the window's rows, the weight's (g, c) plane at its tap
  %x_${index}_${term} = tensor.extract_slice ${window}[${row_offsets}] [${row_sizes}] [${unit_strides}] : ${window_type} to ${row_type}
  %w_${index}_${term} = tensor.extract_slice %weight_groups[${plane_offsets}] [${plane_sizes}] [${unit_strides}] : !weight_groups to ${plane_type}

// fragment taps_first_term: the taps form's first product
%sum0 = arith.mulf ${x}, ${w} : f32

// fragment taps_term: the taps form's next multiply-add
%product${term} = arith.mulf ${x}, ${w} : f32
%sum${term} = arith.addf ${previous}, %product${term} : f32

// fragment im2col: the phase's convolution, several groups, on llvm-cpu: its taps gathered, then a matmul per group
  // IREE's CPU backend gives a grouped convolution-form linalg.generic no convolution pipeline (a few GFLOP/s), but
  // compiles linalg.batch_matmul well. So the taps are gathered (im2col) in chunks of leading tap rows, each chunk
  // contracted into the accumulator acc[g, (n, m), c]:
  //     cols[g, n, m, u, k] = window[n, m + dilation*u, g, k]      (u in the chunk)
  //     acc[g, (n, m), c] += sum_{(u, k)} cols[g, (n, m), (u, k)] * w[g, (u, k), c]
  // A chunk's cols holds its taps' copies of the window: ${chunks} chunk(s) of ${chunk_taps} tap(s) here.
  %acc_${index}_matrix_0 = tensor.collapse_shape %acc_${index}_zero ${acc_reassociation} : ${acc_type} into ${acc_matrix_type}
${chunk_matmuls}
  %acc_${index} = tensor.expand_shape %acc_${index}_matrix_${chunks} ${acc_reassociation} output_shape [${acc_shape}] : ${acc_matrix_type} into ${acc_type}

// fragment im2col_chunk: one chunk of taps: gathered, then contracted into the accumulator
${gather}
  %w_${index}_${chunk} = tensor.extract_slice %w_${index}[${filter_offsets}] [${filter_sizes}] [${filter_strides}] : ${filter_type} to ${filter_chunk_type}
  %w_${index}_${chunk}_matrix = tensor.collapse_shape %w_${index}_${chunk} ${filter_reassociation} : ${filter_chunk_type} into ${filter_matrix_type}
  %acc_${index}_matrix_${next_chunk} = linalg.batch_matmul${matmul_config} ins(%cols_${index}_${chunk}_matrix, %w_${index}_${chunk}_matrix : ${cols_matrix_type}, ${filter_matrix_type}) outs(%acc_${index}_matrix_${chunk} : ${acc_matrix_type}) -> ${acc_matrix_type}

// fragment fill_zero: positions no phase reaches hold zero
  %grad_in_0 = linalg.fill ins(%zero_element : ${element}) outs(%dst : !grad_in) -> !grad_in

// fragment fill_epilogue: positions no phase reaches hold the epilogue of a zero accumulator
  // positions no phase reaches: the epilogue of a zero accumulator
  %grad_in_0 = linalg.generic {indexing_maps = [${maps}], iterator_types = ${iterators}}
      ${ins}outs(%dst : !grad_in) {
  ^bb0(${block_args}%unused: ${element}):
${store_body}
    linalg.yield ${stored} : ${element}
  } -> !grad_in

// fragment phase_major: the channels-first phase-major tensor: a slot per residue of each strided axis
  // The transposed store (channels-first, stride > 1): each phase writes its rows whole into its own slot, in place;
  // one linalg.transpose at the end turns the slots into grad_in (a strided insert per phase is a slow copy dispatch)
  %slots_0 = tensor.empty() : !slots

// fragment transpose_slots: grad_in from the channels-first phase-major tensor: one transpose
  // grad_in position i = s*m + r of a strided axis is row m of slot r: grad_in viewed as (.., m, r, ..) is the slots
  // transposed, each position written once
  %grad_in_split = tensor.expand_shape %dst ${reassociation} output_shape [${split_shape}] : !grad_in into ${split_type}
  %grad_in_transposed = linalg.transpose ins(${slots} : !slots) outs(%grad_in_split : ${split_type}) permutation = [${permutation}]
  %grad_in_interleaved = tensor.collapse_shape %grad_in_transposed ${reassociation} : ${split_type} into !grad_in

// fragment slots: the interleaved store's phase-major tensor (a slot per residue i mod s of each strided axis)
  // The interleaved store (${slots_description}): each phase writes its rows whole into its own slot, a contiguous
  // insert IREE writes in place; one linalg.generic at the end reads every slot once and writes every grad_in
  // position once. A slot holds ceil(size / s) rows per axis; a phase with fewer real rows computes the rest from
  // zeros (or grad_out past its window), and the interleave never reads them.
  %slots_0 = tensor.empty() : ${slots_type}
${zero_slots}

// fragment zero_slot_fill: the zeros of the slots no phase writes
  %zero_slot_empty = tensor.empty() : ${slot_type}
  %zero_slot = linalg.fill ins(${zero} : ${element}) outs(%zero_slot_empty : ${slot_type}) -> ${slot_type}

// fragment zero_slot: a slot of residues no phase reaches: zeros (the interleave gives them f(0, d..))
  ${inserted} = tensor.insert_slice %zero_slot into ${into}[${offsets}] [${sizes}] [${strides}] : ${slot_type} into ${slots_type}

// fragment interleave: grad_in from the phase-major tensor, each position written once (llvm-cpu)
  // grad_in position i (per strided axis, stride s) is row i floordiv s of slot i mod s, read with tensor.extract
  // (IREE 3.13 tiles an indexing map with mod / floordiv only where the tile size and s divide one another); the
  // epilogue and the cast happen here when there is an epilogue (the slots then hold the float32 accumulators)
  %grad_in_interleaved = linalg.generic {indexing_maps = [${maps}], iterator_types = ${iterators}}
      ${ins}outs(%dst : !grad_in) {
  ^bb0(${block_args}%unused: ${element}):
${position}
    %acc = tensor.extract ${slots}[${read}] : ${slots_type}
${store_body}
    linalg.yield ${stored} : ${element}
  } -> !grad_in

// fragment interleave_map: grad_in from the phase-major tensor, each position written once (GPU targets)
  // grad_in position i (per strided axis, stride s) is row i floordiv s of slot i mod s: read through the indexing
  // map, with the target's tiling (workgroup tiles of a strided dim are multiples of s); the epilogue and the cast
  // happen here when there is an epilogue (the slots then hold the float32 accumulators)
  %grad_in_interleaved = linalg.generic {indexing_maps = [${maps}], iterator_types = ${iterators}}
      ins(${slots}${d_operands} : ${slots_type}${d_types}) outs(%dst : !grad_in)${copy_attrs} {
  ^bb0(%acc: ${slot_element}${d_block_args}, %unused: ${element}):
${store_body}
    linalg.yield ${stored} : ${element}
  } -> !grad_in

// fragment interleave_row: position i of a strided axis lies in slot i mod s, at row i floordiv s
    %slot${axis} = affine.apply affine_map<(i) -> (i mod ${stride})>(%i${axis})
    %row${axis} = affine.apply affine_map<(i) -> (i floordiv ${stride})>(%i${axis})
