// Convolution backward-data (CK example 17_convnd_bwd_data) of stride 1, in float32 as bfloat16 x 3: ${rank}-D,
// layout ${layout}.
//
// With stride 1, o + d*f = i + p_lo says that grad_in is the forward convolution of grad_out, zero-padded by
// d*(F-1) - p_lo below and d*(F-1) - p_hi above, with the filter flipped (u = F-1-f) and its channels swapped
// (JAX's _conv_general_dilated_transpose_lhs):
//     grad_in[n, i, c] = sum_{u, k} grad_out_pad[n, i + d*u, k] * w[k, F-1-u, c]
// Each float32 value v splits into bfloat16 parts hi = bf16(v) and lo = bf16(v - hi) (mlir/split_bf16x3.mlir), and
// a product into
//     g*w ~ hi_g*hi_w + hi_g*lo_w + lo_g*hi_w           (lo_g*lo_w, about 2^-18 |g*w|, is dropped)
// so the three products are one bfloat16 convolution over 3K input channels, summed in float32:
//     grad_in[n, i, c] = sum_{u, t, k} G3[n, i + d*u, (t, k)] * W3[u, (t, k), c]
//     G3 = [hi_g, hi_g, lo_g] along the channels,   W3 = [hi_w, lo_w, hi_w] along k, flipped
// The split writes G3 channels-last and zero-padded (in place where it has a tile), and W3 as the named
// convolution's (F.., C_in, C_out) filter; the convolution accumulates in float32 (on a GPU, tiled by the
// target's rule where one applies: ops/policy.py's conv_tiles), and the store puts grad_in in the problem's layout.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!weight = ${weight_type}
!grad_in = ${grad_in_type}

func.func @${function}(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}${transients}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
${split_grad_out}
${flip}${split_weight}
  %acc_empty = tensor.empty() : ${acc_type}
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : ${acc_type}) -> ${acc_type}
  %rows_cl = linalg.${conv_op} {dilations = ${dilations}, strides = ${unit_strides}${dispatch_config}}
      ins(%grad_out3_padded, ${weight3} : ${padded_type}, ${weight3_type}) outs(%acc_zero : ${acc_type}) -> ${acc_type}
${store}
  return %grad_in : !grad_in
}

// fragment flip: the weight with its taps flipped (u = F-1-f), gathered by index arithmetic (llvm-cpu cannot tile
// an indexing map with a negative coefficient; the GPU targets read the weight through one instead)
  %weight_flipped_empty = tensor.empty() : !weight
  %weight_flipped = linalg.generic {indexing_maps = [${map}], iterator_types = ${iterators}}
      outs(%weight_flipped_empty : !weight) {
  ^bb0(%unused: f32):
${indices}
    %tap = tensor.extract %weight[${extract}] : !weight
    linalg.yield %tap : f32
  } -> !weight

// fragment flip_index: a loop index of the flip
    %i${dim} = linalg.index ${dim} : index

// fragment flip_tap: the flipped tap of a filter axis
    %u${dim} = affine.apply affine_map<(f) -> (${last} - f)>(%i${dim})
