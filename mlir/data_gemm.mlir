// Convolution backward-data (CK example 17_convnd_bwd_data) of a one-tap filter with no padding, in float32 as
// bfloat16 x 3, as the GEMM it is: ${rank}-D, layout ${layout}.
//
// With one tap (f = 0) and no padding, s*o + d*f = i + p_lo says that each output position o reads x at i = s*o
// only. So grad_in is zero except at those positions, where
//     grad_in[n, s*o, c] = sum_k grad_out[n, o, k] * w[k, c]
// a matmul of grad_out's (n, o) rows (N*O x K) with the weight (K x C). Each float32 value v splits into
// bfloat16 parts hi = bf16(v) and lo = bf16(v - hi) (mlir/split_bf16x3.mlir), and a product into
//     g*w ~ hi_g*hi_w + hi_g*lo_w + lo_g*hi_w           (lo_g*lo_w, about 2^-18 |g*w|, is dropped)
// so the sum runs over the three parts t and the K channels, in float32:
//     rows[r, c] = sum_{t, k} G3[t, r, k] * W3[t, k, c]     G3 = [hi_g, hi_g, lo_g],   W3 = [hi_w, lo_w, hi_w]
// The split writes both operands' parts channels-last (the rows r = (n, o) of G3 and W3's (k, c) are then
// matrices as they lie); the store puts the rows back in the problem's layout, at the strided positions.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!weight = ${weight_type}
!grad_in = ${grad_in_type}
!rows = ${rows_type}

func.func @${function}(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}${transients}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
${split_grad_out}
${split_weight}
  %g3_merged = tensor.collapse_shape %grad_out3 ${grad_out3_merge} : ${grad_out3_type} into ${g3_merged_type}
  %g3 = tensor.expand_shape %g3_merged [[0, 1], [2]] output_shape [${parts}, ${rows}, ${k}] : ${g3_merged_type} into ${g3_type}
  %w3_merged = tensor.collapse_shape %weight3 ${weight3_merge} : ${weight3_type} into ${w3_merged_type}
  %w3 = tensor.expand_shape %w3_merged [[0, 1], [2]] output_shape [${parts}, ${k}, ${c}] : ${w3_merged_type} into ${w3_type}
  %rows_empty = tensor.empty() : !rows
  %rows_zero = linalg.fill ins(%zero : f32) outs(%rows_empty : !rows) -> !rows
  // rows[r, c] += G3[t, r, k] * W3[t, k, c] over the parts t and the channels k
  %rows = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3, d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%g3, %w3 : ${g3_type}, ${w3_type}) outs(%rows_zero : !rows) {
  ^bb0(%gv: ${element}, %wv: ${element}, %sum: f32):
    %g32 = arith.extf %gv : ${element} to f32
    %w32 = arith.extf %wv : ${element} to f32
${multiply_add}
    linalg.yield %new_sum : f32
  } -> !rows
  %rows_cl = tensor.expand_shape %rows ${rows_split} output_shape [${rows_cl_shape}] : !rows into ${rows_cl_type}
${store}
  return %grad_in : !grad_in
}

// fragment direct: every position of grad_in is read (stride 1): the rows, in the problem's layout, are grad_in (f16x1: times 1 / (s_g s_w))
  %grad_in = linalg.generic {indexing_maps = [${read_map}${scale_maps}, ${write_map}], iterator_types = ${iterators}}
      ins(%rows_cl${scale_ins} : ${rows_cl_type}${scale_types}) outs(%dst : !grad_in) {
  ^bb0(%value: f32${scale_args}, %unused: f32):${unscale}
    linalg.yield ${result} : f32
  } -> !grad_in

// fragment strided: the rows, in the problem's layout, at the positions s*o of a zero grad_in (f16x1: times 1 / (s_g s_w))
  %placed_empty = tensor.empty() : ${placed_type}
  %placed = linalg.generic {indexing_maps = [${read_map}${scale_maps}, ${write_map}], iterator_types = ${iterators}}
      ins(%rows_cl${scale_ins} : ${rows_cl_type}${scale_types}) outs(%placed_empty : ${placed_type}) {
  ^bb0(%value: f32${scale_args}, %unused: f32):${unscale}
    linalg.yield ${result} : f32
  } -> ${placed_type}
  %grad_in_zero = linalg.fill ins(%zero : f32) outs(%dst : !grad_in) -> !grad_in
  %grad_in = tensor.insert_slice %placed into %grad_in_zero[${offsets}] [${sizes}] [${strides}] : ${placed_type} into !grad_in

// fragment float32: a float32 problem as one GEMM (conv_bwd_data's gemm form of a float32 problem), in float32, one
// linalg.generic with no transposes around it (its tiles: data_tiles.gemm_tiles). Channels-last, grad_out's rows
// m = (n, o) are a matrix as they lie, and
//     rows[m, c] = sum_k grad_out[m, k] * w[k, c]
// channels-first, grad_out's positions o lie contiguous along o in each channel's row, so each image's rows are the
// weight's transpose times its grad_out:
//     rows[n, c, o] = sum_k w[k, c] * grad_out[n, k, o]
// At stride 1 the rows are grad_in (written in place); at stride s they are grad_in at the positions i = s*o, zero
// elsewhere. With one position an image (a channels-first squeeze-excite layer) o is left out, rows[n, c]
// (data_gemm.one_position).
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!weight = ${weight_type}
!grad_in = ${grad_in_type}
!rows = ${rows_type}

func.func @${function}(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}${transients}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %g = tensor.collapse_shape %grad_out ${positions_merge} : !grad_out into ${g_type}
  %w = tensor.collapse_shape %weight [[0], [${weight_rest}]] : !weight into ${w_type}
  %rows_dst = ${rows_dst}
  %rows_zero = linalg.fill ins(%zero : f32) outs(%rows_dst : !rows) -> !rows
  %rows = linalg.generic {indexing_maps = [affine_map<(${dims}) -> (${g_index})>, affine_map<(${dims}) -> (k, c)>, affine_map<(${dims}) -> (${rows_index})>], iterator_types = [${iterators}]${dispatch_config}}
      ins(%g, %w : ${g_type}, ${w_type}) outs(%rows_zero : !rows) {
  ^bb0(%gv: f32, %wv: f32, %sum: f32):
${multiply_add}
    linalg.yield %new_sum : f32
  } -> !rows
${store}
  return %grad_in : !grad_in
}

// fragment float32_direct: stride 1: the rows are grad_in
  %grad_in = tensor.expand_shape %rows ${positions_merge} output_shape [${grad_in_shape}] : !rows into !grad_in

// fragment float32_residues: stride s: the rows at grad_in's positions s*o, zero elsewhere
  // grad_in seen as (n, c, o_1, r_1, o_2, r_2, ...), i = s*o + r (each axis a whole s times grad_out's), written
  // once by one elementwise pass: rows[n, c, o] where every residue r is 0, else zero (a strided insert into a zero
  // grad_in is a copy dispatch at a tenth of copy bandwidth in IREE 3.13)
  %rows_spatial = tensor.expand_shape %rows ${positions_merge} output_shape [${rows_spatial_shape}] : !rows into ${rows_spatial_type}
  %dst_residues = tensor.expand_shape %dst ${residue_merge} output_shape [${residues_shape}] : !grad_in into ${residues_type}
  %residues = linalg.generic {indexing_maps = [${read_map}, ${write_map}], iterator_types = ${iterators}}
      ins(%rows_spatial : ${rows_spatial_type}) outs(%dst_residues : ${residues_type}) {
  ^bb0(%value: f32, %unused: f32):
    %c0 = arith.constant 0 : index
${residue_indices}
    %residue_sum = affine.apply ${residue_sum}
    %reached = arith.cmpi eq, %residue_sum, %c0 : index
    %placed = arith.select %reached, %value, %zero : f32
    linalg.yield %placed : f32
  } -> ${residues_type}
  %grad_in = tensor.collapse_shape %residues ${residue_merge} : ${residues_type} into !grad_in
