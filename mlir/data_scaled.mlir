// Convolution backward-data (CK example 17_convnd_bwd_data) in float32 as float16 products of scaled operands
// (f16x1; offered only where PyTorch allows its float32 convolutions reduced precision, by the rule in
// ops/precision.py), ${rank}-D, layout ${layout}, stride ${stride}.
//
// grad_out and the weight are each scaled by the power of two s that puts its largest finite magnitude in
// [2^14, 2^15), and rounded to float16 (mlir/split_bf16x3.mlir's largest and split_scaled fragments):
//     P_g = f16(s_g * grad_out),   P_w = f16(s_w * w)
// each keeping its value's 11 significant bits (TF32's). Then, per spatial axis (s*o + d*f = i + p_lo),
//     grad_in[n, i, c] = (1 / (s_g s_w)) sum_{o, f, k} P_g[n, o, k] * P_w[k, f, c]
// each product within about 2^-10 of its magnitude, summed in float32: the stride phases of
// mlir/conv_bwd_data.mlir over the float16 operands (the private function below, as its own template renders it),
// each phase's sums times 1 / (s_g s_w) in its store, before they take grad_in's place.
//
// Problem: ${problem_name}

${phases_module}
func.func @${function}(%grad_out: ${grad_out_type}, %weight: ${weight_type}, %dst: ${grad_in_type} {iree.abi.output = 0 : index}${transients}) -> ${grad_in_type} {
${scale_grad_out}
${scale_weight}
  %grad_in = func.call @${phases}(%grad_out3, %weight3, %grad_out_largest, %weight_largest, %dst) : (${grad_out_scaled_type}, ${weight_scaled_type}, tensor<f32>, tensor<f32>, ${grad_in_type}) -> ${grad_in_type}
  return %grad_in : ${grad_in_type}
}
