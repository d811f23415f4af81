// Convolution backward-data (CK example 17_convnd_bwd_data), ${rank}-D, layout ${layout}.
//
// The forward convolution, per spatial axis (s stride, d dilation, p_lo low padding):
//     out[n, o, k] = sum_{f, c} in[n, i, c] * w[k, f, c]      where   s*o + d*f = i + p_lo
// Backward-data is that identity read from the input side: every input position i sums
// grad_out[n, o, k] * w[k, f, c] over the (o, f, k) that land on it.
//
// Stride phases (CK's YTilde = s / gcd(s, d)): the taps f = f0 + (s/g)*t of phase f0 land exactly on
// the input positions i = s*m + r - p_lo, where d*f0 = r + s*q, with o = m - q - (d/g)*t. So phase f0 is a
// stride-1 convolution, dilation d/g, of the zero-padded output gradient with its taps flipped (u = T-1-t):
//     grad_in[n, s*m + r - p_lo, c] = sum_{u, k} grad_out_padded[n, m' + (d/g)*u, k] * w_phase[u, k, c]
// and is inserted with stride s into grad_in. No multiply-add touches an inserted zero; input positions
// that no phase reaches keep the zero they start with. Stride 1 has a single phase: the padded output
// gradient convolved with the flipped filter.
//
// Each phase's filter is gathered from the weight (flip and transpose to the named op's
// filter-last-but-one layout) by a small linalg.generic: indexing maps stay free of negative
// coefficients, which llvm-cpu's tiling cannot take. Accumulation is float32; the store casts to
// ${element} and, for channels-first layouts, transposes back.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!weight = ${weight_type}
!grad_in = ${grad_in_type}
!grad_out_cl = ${grad_out_cl_type}
!acc = ${acc_type}

func.func @${function}(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : ${element}
${grad_out_to_channels_last}
  %acc_empty = tensor.empty() : !acc
  %acc_0 = linalg.fill ins(%zero : f32) outs(%acc_empty : !acc) -> !acc
${phases}
  %grad_in = linalg.generic {indexing_maps = [${store_acc_map}, ${store_dst_map}], iterator_types = ${store_iterators}}
      ins(%acc_${phase_count} : !acc) outs(%dst : !grad_in) {
  ^bb0(%a: f32, %unused: ${element}):
${store_body}
  } -> !grad_in
  return %grad_in : !grad_in
}
