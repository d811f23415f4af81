// Grouped convolution backward-weight (CK example 20_grouped_conv_bwd_weight), ${rank}-D, layout ${layout}.
//
// The forward convolution, per spatial axis (s stride, d dilation, p_lo low padding), group g:
//     out[n, o, g*K + k] = sum_{f, c} x[n, i, g*C + c] * w[g*K + k, f, c]      where   s*o + d*f = i + p_lo
// Its gradient with respect to w is the same identity read as a sum over what the weight does not index,
// the batch n and the output positions o:
//     grad_w[g*K + k, f, c] = sum_{n, o} x_padded[n, s*o + d*f, g*C + c] * grad_out[n, o, g*K + k]
// where x_padded is x with p_lo zeros in front (i + p_lo = s*o + d*f) and, behind, as many zeros as the last
// window reads (taps outside x multiply a zero), or x cut where the last window ends: exactly what is read. That is a convolution with the roles swapped (JAX's
// transpose_rhs: stride and dilation trade places): grad_out is the filter, its taps o dilated by s; x is the
// image; f runs over the output positions with stride d; and the batch n is reduced like the input channels
// of a forward convolution. As an implicit GEMM per group: K rows, F*C columns, a reduction of length N*O
// (x must stay the first operand: IREE's implicit GEMM takes it as the image). No index map has a negative
// coefficient (s*o + d*f >= 0).
//
// Groups fold into channels as in PyTorch and CK's NHWGC: tensor.expand_shape splits G*C and G*K into
// (G, C) and (G, K) (free reshapes).
//
// The batch splits into ${batch_split} chunks of ${batch_chunk} (the same free reshape, N = J*Nc): the weight
// gradient is small and its reduction long (here ${reduction_length} terms per element), so one dispatch
// computes J partial sums in parallel and a second adds them:
//     partial[j, g, k, f, c] = sum_{nc, o} x_padded[j*Nc + nc, s*o + d*f, g, c] * grad_out[j*Nc + nc, o, g, k]
//     grad_w[g*K + k, f, c]  = sum_j partial[j, g, k, f, c]
// (J = 1: no split, no J dim and no sum.) One linalg.generic over (${loop_names}) accumulates float32 into
// !partial = (${acc_names}); tensor.collapse_shape merges (G, K); the sum over J casts to ${out_element}.
//
// Problem: ${problem_name}

!x = ${x_type}
!grad_out = ${grad_out_type}
!grad_w = ${grad_w_type}
!x_padded = ${x_padded_type}
!x_groups = ${x_groups_type}
!grad_out_groups = ${grad_out_groups_type}
!partial = ${acc_type}
!partial_flat = ${partial_flat_type}
!acc_flat = ${acc_flat_type}

func.func @${function}(%x: !x, %grad_out: !grad_out, %dst: !grad_w {iree.abi.output = 0 : index}${transients}) -> !grad_w {
  %zero = arith.constant 0.0 : f32
${pad_x}
${x_groups}
${grad_out_groups}
${contraction}
  %grad_w = linalg.generic {indexing_maps = [${store_map}, ${store_map}], iterator_types = ${store_iterators}}
      ins(${summed} : !acc_flat) outs(%dst : !grad_w) {
  ^bb0(%a: f32, %unused: ${out_element}):
${narrow}
    linalg.yield ${stored} : ${out_element}
  } -> !grad_w
  return %grad_w : !grad_w
}

// fragment flatten: the partial sums with G and K merged
  %partial_flat = tensor.collapse_shape %partial ${acc_flat_reassociation} : !partial into !partial_flat

// fragment unit_view: an operand with the unit dims the generic leaves out collapsed away (a pinned configuration
// survives only on a generic with no unit dims: IREE rebuilds one that has them without its attributes)
  ${result} = tensor.collapse_shape ${source} ${reassociation} : ${source_type} into ${result_type}

// fragment chunk_sum: the sum of the J chunks' partial sums
  // grad_w = sum over the ${batch_split} chunks (j, the last dim), still float32
  %acc_empty = tensor.empty() : !acc_flat
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc_flat) -> !acc_flat
  %acc = linalg.generic {indexing_maps = [${chunks_map}, ${chunks_out_map}], iterator_types = ${chunks_iterators}}
      ins(%partial_flat : !partial_flat) outs(%acc_zero : !acc_flat) {
  ^bb0(%p: f32, %sum: f32):
    %new_sum = arith.addf %sum, %p : f32
    linalg.yield %new_sum : f32
  } -> !acc_flat

// fragment zero_element: the zero that pads x
  %zero_element = arith.constant 0.0 : ${element}

// fragment zeros: x_padded when every window reads padding only
  %zero_element = arith.constant 0.0 : ${element}
  %x_padded_empty = tensor.empty() : !x_padded
  %x_padded = linalg.fill ins(%zero_element : ${element}) outs(%x_padded_empty : !x_padded) -> !x_padded

// fragment generic: the convolution-form linalg.generic (the GPU targets; llvm-cpu's fallback), J partial sums
  %partial_empty = tensor.empty() : ${partial_type}
  %partial_zero = linalg.fill ins(%zero : f32) outs(%partial_empty : ${partial_type}) -> ${partial_type}
  // partial[j, g, k, f, c] += x_padded[j, nc, s*o + d*f, g, c] * grad_out[j, nc, o, g, k], per axis
  // (channels-first: the same sums)${unit_views}
  ${partial} = linalg.generic {indexing_maps = [${x_map}, ${grad_out_map}, ${acc_map}], iterator_types = ${conv_iterators}}
      ins(${x_operand}, ${grad_out_operand} : ${x_operand_type}, ${grad_out_operand_type}) outs(%partial_zero : ${partial_type})${dispatch_config} {
  ^bb0(%xv: ${element}, %gv: ${element}, %sum: f32):
${to_accumulator}
${multiply_add}
    linalg.yield %new_sum : f32
  } -> ${partial_type}
${flatten}
${sum_chunks}

// fragment depthwise: on llvm-cpu, depthwise problems (C = K = 1): a named depthwise convolution, the roles swapped
  // grad_w[g, f] = sum_{n, o} x_padded[n, s*o + d*f, g] * grad_out[n, o, g] is a depthwise convolution of x_padded
  // (the batch as one more leading spatial axis) with grad_out as its filter (taps (n, o), dilated by (1, s)),
  // strided by (1, d), into one output position on the batch axis. IREE's CPU backend gives the named op its
  // convolution pipeline, vectorized over the groups.
${to_channels_last}
  %x_dw = tensor.expand_shape ${x_cl} ${x_dw_reassociation} output_shape [${x_dw_shape}] : ${x_cl_type} into ${x_dw_type}
  %acc_dw_empty = tensor.empty() : ${acc_dw_type}
  %acc_dw_zero = linalg.fill ins(%zero : f32) outs(%acc_dw_empty : ${acc_dw_type}) -> ${acc_dw_type}
  %acc_dw = linalg.${conv_op} {dilations = ${dilations}, strides = ${strides}}
      ins(%x_dw, ${grad_out_cl} : ${x_dw_type}, ${grad_out_cl_type}) outs(%acc_dw_zero : ${acc_dw_type}) -> ${acc_dw_type}
  %acc_taps = tensor.collapse_shape %acc_dw ${acc_taps_reassociation} : ${acc_dw_type} into ${acc_taps_type}
  %acc_t_empty = tensor.empty() : ${acc_t_type}
  %acc_t = linalg.transpose ins(%acc_taps : ${acc_taps_type}) outs(%acc_t_empty : ${acc_t_type}) permutation = [${acc_permutation}]
  %acc = tensor.expand_shape %acc_t ${acc_reassociation} output_shape [${acc_shape}] : ${acc_t_type} into !acc_flat

// fragment im2col: on llvm-cpu, the windows gathered (im2col), then a matmul per group
  // IREE's CPU backend gives the convolution-form linalg.generic no convolution pipeline (a few GFLOP/s), but compiles
  // linalg.batch_matmul well. Per group, with grad_out's (g, k) moved first (one copy):
  //     cols[g, (n, o), (f, c)] = x_padded[n, s*o + d*f, g, c]
  //     grad_w[g, k, (f, c)] = sum_{(n, o)} grad_out_t[g, k, (n, o)] * cols[g, (n, o), (f, c)]
  // The taps are gathered in ${chunks} chunk(s) of ${chunk_taps} (chunks of leading tap rows: a chunk's cols holds its
  // taps' copies of x), each chunk's product inserted at its taps of the float32 result.
  %grad_out_t_empty = tensor.empty() : ${grad_out_t_type}
  %grad_out_t = linalg.generic {indexing_maps = [${grad_out_t_read}, ${grad_out_t_map}], iterator_types = ${grad_out_t_iterators}}
      ins(%grad_out_groups : !grad_out_groups) outs(%grad_out_t_empty : ${grad_out_t_type}) {
  ^bb0(%gv: ${element}, %unused: ${element}):
    linalg.yield %gv : ${element}
  } -> ${grad_out_t_type}
  %grad_out_matrix = tensor.collapse_shape %grad_out_t ${grad_out_t_reassociation} : ${grad_out_t_type} into ${grad_out_matrix_type}
  %taps_0 = tensor.empty() : ${taps_type}
${chunk_matmuls}
${taps_to_weight}

// fragment im2col_chunk: one chunk of taps: gathered, contracted, inserted
${gather}
  %product_${chunk}_empty = tensor.empty() : ${product_type}
  %product_${chunk}_zero = linalg.fill ins(%zero : f32) outs(%product_${chunk}_empty : ${product_type}) -> ${product_type}
  %product_${chunk} = linalg.batch_matmul ins(%grad_out_matrix, %cols_${chunk}_matrix : ${grad_out_matrix_type}, ${cols_matrix_type}) outs(%product_${chunk}_zero : ${product_type}) -> ${product_type}
  %product_${chunk}_taps = tensor.expand_shape %product_${chunk} ${product_reassociation} output_shape [${product_taps_shape}] : ${product_type} into ${product_taps_type}
  %taps_${next_chunk} = tensor.insert_slice %product_${chunk}_taps into %taps_${chunk}[${taps_offsets}] [${product_taps_shape}] [${taps_strides}] : ${product_taps_type} into ${taps_type}

// fragment taps_channels_last: the result (g, k, f, c) is grad_w's layout: a free reshape
  %acc = tensor.collapse_shape %taps_${chunks} ${taps_reassociation} : ${taps_type} into !acc_flat

// fragment taps_channels_first: the result (g, k, f, c), transposed to grad_w's (g, k, c, f)
  %taps_t_empty = tensor.empty() : ${taps_t_type}
  %taps_t = linalg.transpose ins(%taps_${chunks} : ${taps_type}) outs(%taps_t_empty : ${taps_t_type}) permutation = [${permutation}]
  %acc = tensor.collapse_shape %taps_t ${taps_reassociation} : ${taps_t_type} into !acc_flat

// fragment per_image: on llvm-cpu, channels-first problems: one matmul per (image, group), then the sum over images
  // The im2col form's one matmul per group has K x F*C outputs and a reduction of N*O: few output tiles for two
  // cores when C is small (a first layer), and IREE does not split a reduction. Here each image is its own batch
  // entry, read where x and grad_out lie (channels-first: the output positions o last, no copy of grad_out):
  //     cols[n, g, c, f, o] = x_padded[n, g, c, s*o + d*f]
  //     per_image[(n, g), (c, f), k] = sum_o cols[(n, g), (c, f), o] * grad_out[(n, g), k, o]
  //     grad_w[g, k, c, f] = sum_n per_image[n, g, (c, f), k]
  %cols_empty = tensor.empty() : ${cols_type}
  %cols = linalg.generic {indexing_maps = [${cols_read}, ${cols_map}], iterator_types = ${cols_iterators}}
      ins(%x_groups : !x_groups) outs(%cols_empty : ${cols_type}) {
  ^bb0(%xv: ${element}, %unused: ${element}):
    linalg.yield %xv : ${element}
  } -> ${cols_type}
  %cols_matrix = tensor.collapse_shape %cols ${cols_reassociation} : ${cols_type} into ${cols_matrix_type}
  %grad_out_matrix = tensor.collapse_shape %grad_out_groups ${grad_out_reassociation} : !grad_out_groups into ${grad_out_matrix_type}
  %per_image_empty = tensor.empty() : ${per_image_type}
  %per_image_zero = linalg.fill ins(%zero : f32) outs(%per_image_empty : ${per_image_type}) -> ${per_image_type}
  %per_image = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, r) -> (b, m, r)>, affine_map<(b, m, n, r) -> (b, n, r)>, affine_map<(b, m, n, r) -> (b, m, n)>]
      ins(%cols_matrix, %grad_out_matrix : ${cols_matrix_type}, ${grad_out_matrix_type}) outs(%per_image_zero : ${per_image_type}) -> ${per_image_type}
  %per_image_taps = tensor.expand_shape %per_image ${per_image_reassociation} output_shape [${per_image_taps_shape}] : ${per_image_type} into ${per_image_taps_type}
  %acc_groups_empty = tensor.empty() : ${acc_groups_type}
  %acc_groups_zero = linalg.fill ins(%zero : f32) outs(%acc_groups_empty : ${acc_groups_type}) -> ${acc_groups_type}
  %acc_groups = linalg.generic {indexing_maps = [${images_read}, ${images_map}], iterator_types = ${images_iterators}}
      ins(%per_image_taps : ${per_image_taps_type}) outs(%acc_groups_zero : ${acc_groups_type}) {
  ^bb0(%p: f32, %sum: f32):
    %new_sum = arith.addf %sum, %p : f32
    linalg.yield %new_sum : f32
  } -> ${acc_groups_type}
  %acc = tensor.collapse_shape %acc_groups ${acc_groups_reassociation} : ${acc_groups_type} into !acc_flat

// fragment per_image_nn: on llvm-cpu, the per_image form with each matmul's rows contiguous (no reduction along a row)
  // (channels-last: the gather reads x where it lies and writes the columns channels-first, grad_out is transposed
  // into the matmul's order, and the sum over the images writes grad_w's (g, k, f, c))
  // per_image's matmuls reduce along the contiguous axis of both operands (the output positions o). Here one
  // operand is laid out (o, channels) first, so that each matmul streams rows of its other output axis: the
  // operand with fewer columns per image (${moved}) is the one moved, and the matmul's rows are the larger side
  // (${rows}). IREE must keep that transpose (--iree-global-opt-propagate-transposes=false, the tuning table's rule).
  //     cols[n, g, c, f, o] = x_padded[n, g, c, s*o + d*f]
  //     per_image[(n, g), (c, f), k] = sum_o cols[(n, g), (c, f), o] * grad_out_t[(n, g), o, k]        (grad_out moved)
  //     per_image[(n, g), k, (c, f)] = sum_o grad_out[(n, g), k, o] * cols_t[(n, g), o, (c, f)]        (cols moved)
  //     grad_w[g, k, c, f] = sum_n per_image[n, g, .., ..]
  %cols_empty = tensor.empty() : ${cols_type}
  %cols = linalg.generic {indexing_maps = [${cols_read}, ${cols_map}], iterator_types = ${cols_iterators}}
      ins(%x_groups : !x_groups) outs(%cols_empty : ${cols_type}) {
  ^bb0(%xv: ${element}, %unused: ${element}):
    linalg.yield %xv : ${element}
  } -> ${cols_type}
  %cols_matrix = tensor.collapse_shape %cols ${cols_reassociation} : ${cols_type} into ${cols_matrix_type}
${grad_out_operand}
  %per_image_empty = tensor.empty() : ${per_image_type}
  %per_image_zero = linalg.fill ins(%zero : f32) outs(%per_image_empty : ${per_image_type}) -> ${per_image_type}
  %per_image = linalg.batch_matmul${matmul_config} ins(${lhs}, ${rhs} : ${lhs_type}, ${rhs_type}) outs(%per_image_zero : ${per_image_type}) -> ${per_image_type}
  %per_image_taps = tensor.expand_shape %per_image ${per_image_reassociation} output_shape [${per_image_taps_shape}] : ${per_image_type} into ${per_image_taps_type}
  %acc_groups_empty = tensor.empty() : ${acc_groups_type}
  %acc_groups_zero = linalg.fill ins(%zero : f32) outs(%acc_groups_empty : ${acc_groups_type}) -> ${acc_groups_type}
  %acc_groups = linalg.generic {indexing_maps = [${images_read}, ${images_map}], iterator_types = ${images_iterators}}
      ins(%per_image_taps : ${per_image_taps_type}) outs(%acc_groups_zero : ${acc_groups_type}) {
  ^bb0(%p: f32, %sum: f32):
    %new_sum = arith.addf %sum, %p : f32
    linalg.yield %new_sum : f32
  } -> ${acc_groups_type}
  %acc = tensor.collapse_shape %acc_groups ${acc_groups_reassociation} : ${acc_groups_type} into !acc_flat

// fragment grad_out_moved: grad_out's per-image matrices transposed into the matmul's order ((o, k); channels-last (k, o))
  %grad_out_t_empty = tensor.empty() : ${grad_out_t_type}
  %grad_out_t = linalg.transpose ins(%grad_out_groups : !grad_out_groups) outs(%grad_out_t_empty : ${grad_out_t_type}) permutation = [${grad_out_permutation}]
  %grad_out_matrix = tensor.collapse_shape %grad_out_t ${grad_out_reassociation} : ${grad_out_t_type} into ${grad_out_matrix_type}

// fragment grad_out_kept: grad_out's per-image matrices as they lie, (k, o)
  %grad_out_matrix = tensor.collapse_shape %grad_out_groups ${grad_out_reassociation} : !grad_out_groups into ${grad_out_matrix_type}

// fragment tap_sums: on llvm-cpu, channels-first grouped problems of few channels a group: a sum per tap and image
  // With a few channels a group the matmul forms' matrices are a few rows wide. Here one generic reads each row of
  // grad_out once and x's rows at every tap (a strided slice per tap: s*o + d*f), and keeps one float32 sum per tap,
  // reducing the output positions, the last one contiguous in every operand (IREE's CPU backend vectorizes along it):
  //     per_tap[f][n, g, k, c] = sum_o grad_out[n, g, k, o] * x_padded[n, g, c, s*o + d*f]      (${taps} taps)
  // then one generic sums the images and puts each tap's sums in place:
  //     grad_w[g, k, c, f] = sum_n per_tap[f][n, g, k, c]
${x_rows}
  %per_tap_empty = tensor.empty() : ${per_tap_type}
  %per_tap_zero = linalg.fill ins(%zero : f32) outs(%per_tap_empty : ${per_tap_type}) -> ${per_tap_type}
  %per_tap:${taps} = linalg.generic {indexing_maps = [${per_tap_maps}], iterator_types = ${per_tap_iterators}}
      ins(%grad_out_groups, ${x_row_values} : !grad_out_groups, ${x_row_types}) outs(${per_tap_zeros} : ${per_tap_types}) {
  ^bb0(%gv: ${element}, ${x_row_args}, ${sum_args}):
${products}
    linalg.yield ${sums} : ${sum_types}
  } -> (${per_tap_types})
  %acc_groups_empty = tensor.empty() : ${acc_groups_type}
  %acc_groups_zero = linalg.fill ins(%zero : f32) outs(%acc_groups_empty : ${acc_groups_type}) -> ${acc_groups_type}
  %acc_groups = linalg.generic {indexing_maps = [${images_maps}], iterator_types = ${images_iterators}}
      ins(${per_tap_results} : ${per_tap_types}) outs(%acc_groups_zero : ${acc_groups_type}) {
  ^bb0(${tap_args}, %sum: f32):
${tap_index_lines}
    %tap = affine.apply ${tap_number}(${tap_indices})
${pick}
    %new_sum = arith.addf %sum, ${picked} : f32
    linalg.yield %new_sum : f32
  } -> ${acc_groups_type}
  %acc = tensor.collapse_shape %acc_groups ${acc_groups_reassociation} : ${acc_groups_type} into !acc_flat

// fragment tap_sums_row: x's rows at one tap f: s*o + d*f along each axis
  %x_tap_${tap} = tensor.extract_slice %x_groups[${offsets}] [${sizes}] [${strides}] : !x_groups to ${row_type}

// fragment tap_sums_product: one tap's product, added to its sum
    %product${tap} = arith.mulf ${g}, ${x} : f32
    %sum${tap}_next = arith.addf %sum${tap}, %product${tap} : f32

// fragment tap_sums_pick: the sum of tap ${tap} where the position's tap is ${tap}
    %c${tap} = arith.constant ${tap} : index
    %tap_is_${tap} = arith.cmpi eq, %tap, %c${tap} : index
    %picked${tap} = arith.select %tap_is_${tap}, %p${tap}, ${previous} : f32

// fragment shifted: on llvm-cpu, stride-1 problems of one group (channels-last operands moved channels-first): one
// batch matmul per tap over contiguous slices of x flattened. With x padded to the windows' grid (one row more on
// the first axis) and grad_out padded on its inner axes to the same row lengths, flattened, the tap f's window of
// every output position is one slice at the offset off(f) = sum_a f_a * stride_a; the padded positions of grad_out
// are zeros, so the junk they pair with adds nothing:
//     per_tap[f][n, k, c] = sum_l grad_out_flat[n, k, l] * x_flat[n, c, l + off(f)]
//     grad_w[k, c, f] = sum_n per_tap[f][n, k, c]
  %x_grid = tensor.pad ${x} low[${x_low}] high[${x_high}] {
  ^bb0(${x_index_args}):
    tensor.yield %zero_element : ${element}
  } : ${x_cf_type} to ${x_grid_type}
  %x_flat = tensor.collapse_shape %x_grid ${flat_reassociation} : ${x_grid_type} into ${x_flat_type}
  %grad_out_grid = tensor.pad ${grad_out} low[${grad_out_low}] high[${grad_out_high}] {
  ^bb0(${x_index_args}):
    tensor.yield %zero_element : ${element}
  } : ${grad_out_cf_type} to ${grad_out_grid_type}
  %grad_out_flat = tensor.collapse_shape %grad_out_grid ${flat_reassociation} : ${grad_out_grid_type} into ${grad_out_flat_type}
  %taps_empty = tensor.empty() : ${taps_type}
  %tap_empty = tensor.empty() : ${tap_type}
${taps}
  %taps_grid = tensor.expand_shape %taps_0 ${taps_reassociation} output_shape [${taps_shape}] : ${taps_type} into ${taps_grid_type}
  %acc_empty = tensor.empty() : !acc_flat
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc_flat) -> !acc_flat
  %acc = linalg.generic {indexing_maps = [${images_read}, ${images_map}], iterator_types = ${images_iterators}}
      ins(%taps_grid : ${taps_grid_type}) outs(%acc_zero : !acc_flat) {
  ^bb0(%p: f32, %sum: f32):
    %new_sum = arith.addf %sum, %p : f32
    linalg.yield %new_sum : f32
  } -> !acc_flat

// fragment shifted_tap: one tap's batch matmul, inserted into the taps' sums
  %x_tap_${tap} = tensor.extract_slice %x_flat[0, 0, ${offset}] [${batch}, ${channels}, ${rows}] [1, 1, 1] : ${x_flat_type} to ${x_tap_type}
  %tap_zero_${tap} = linalg.fill ins(%zero : f32) outs(%tap_empty : ${tap_type}) -> ${tap_type}
  %tap_${tap} = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, r) -> (b, m, r)>, affine_map<(b, m, n, r) -> (b, n, r)>, affine_map<(b, m, n, r) -> (b, m, n)>]
      ins(%grad_out_flat, %x_tap_${tap} : ${grad_out_flat_type}, ${x_tap_type}) outs(%tap_zero_${tap} : ${tap_type}) -> ${tap_type}
  %taps_${next} = tensor.insert_slice %tap_${tap} into %taps_${after}[${tap}, 0, 0, 0] [1, ${batch}, ${out_channels}, ${channels}] [1, 1, 1, 1] : ${tap_type} into ${taps_type}

// fragment columns: on the GPU targets, depthwise problems (C = K = 1): partial sums along an output axis
  // x read where it lies: grad_w[g, f] = sum_{n, o} x[n, s*o + d*f - p_lo, g] * grad_out[n, o, g] (channels-first
  // x[n, g, ..], grad_out[n, g, o]), a term whose x position is off x zero, in two generics. The first keeps a
  // partial sum per (plane, tap = f.., side) and reduces the rest, so that a workgroup's neighbouring threads (along
  // side) read neighbouring elements of x and grad_out. Channels-first: plane = (n, g), side = o_last, the other
  // output axes (o_rest, merged) reduced. Channels-last: plane = (n, o_rest), side = g, o_last reduced. It reads x
  // in its body at the position clamped onto x and selects zero off x: no padded copy of x (IREE copies a pad it
  // does not fuse in a dispatch of its own, and fused into this reduction the pad computed wrong sums). The dims
  // merged here IREE would merge itself, rebuilding the generic without its pinned tile. The second generic sums
  // the planes and o_last (channels-first) or the planes (channels-last).
  %grad_out_planes = tensor.collapse_shape %grad_out ${planes_reassociation} : !grad_out into ${planes_type}
  %x_off = arith.constant 0.0 : ${element}
  %c0 = arith.constant 0 : index
  %columns_empty = tensor.empty() : ${columns_type}
  %columns_zero = linalg.fill ins(%zero : f32) outs(%columns_empty : ${columns_type}) -> ${columns_type}
  %columns = linalg.generic {indexing_maps = [${grad_out_map}, ${columns_map}], iterator_types = ${columns_iterators}${dispatch_config}}
      ins(%grad_out_planes : ${planes_type}) outs(%columns_zero : ${columns_type}) {
  ^bb0(%gv: ${element}, %sum: f32):
    %plane = linalg.index 0 : index
    %tap = linalg.index 1 : index
    %n = affine.apply affine_map<(p) -> (p floordiv ${plane_images})>(%plane)
${channel}
${positions}
    %x_read = tensor.extract %x[${x_index}] : !x
    %xv = arith.select ${on_x}, %x_read, %x_off : ${element}
${to_accumulator}
${multiply_add}
    linalg.yield %new_sum : f32
  } -> ${columns_type}
  %columns_split = tensor.expand_shape %columns [[0, 1], [2], [3]] output_shape [${split_shape}] : ${columns_type} into ${split_type}
  %taps_empty = tensor.empty() : ${taps_type}
  %taps_zero = linalg.fill ins(%zero : f32) outs(%taps_empty : ${taps_type}) -> ${taps_type}
  %taps = linalg.generic {indexing_maps = [${split_read}, affine_map<(g, t, n, o) -> (g, t)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%columns_split : ${split_type}) outs(%taps_zero : ${taps_type}) {
  ^bb0(%p: f32, %s: f32):
    %new_s = arith.addf %s, %p : f32
    linalg.yield %new_s : f32
  } -> ${taps_type}
  %acc = tensor.expand_shape %taps ${acc_reassociation} output_shape [${acc_shape}] : ${taps_type} into !acc_flat

// fragment columns_position: one axis's x position i = s*o + d*f - p_lo, whether it lies on x, the position clamped
    // axis ${axis}: i = s*o + d*f - p_lo, on x where i < size unsigned (a position before x is a huge one)
    %o_${axis} = linalg.index ${o_dim} : index
    %i${axis} = affine.apply affine_map<(o, t) -> (${position})>(%o_${axis}, %tap)
${on_and_clamped}
