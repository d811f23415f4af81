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
// Each phase's filter is gathered from the weight (flip and transpose) by a small linalg.generic: indexing
// maps stay free of negative coefficients, which llvm-cpu's tiling cannot take.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!weight = ${weight_type}
!grad_in = ${grad_in_type}
!grad_out_cl = ${grad_out_cl_type}
${extra_aliases}
func.func @${function}(%grad_out: !grad_out, %weight: !weight${extra_arguments}, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : ${element}
${grad_out_to_channels_last}
${weight_view}
${d_views}
${initial}
${phases}
  return ${result} : !grad_in
}
