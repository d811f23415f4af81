
!d_grad_out = tensor<16x64x16x16xf32>
!d_weight = tensor<64x64x1x1xf32>
!d_grad_in = tensor<16x64x16x16xf32>
!d_grad_out_cl = tensor<16x16x16x64xf32>
!d_d0 = tensor<16x64x16x16xf32>

func.func private @data(%grad_out: !d_grad_out, %weight: !d_weight, %d0: !d_d0, %dst: !d_grad_in) -> !d_grad_in {
  %zero = arith.constant 0.0 : f32
  %zero_element = arith.constant 0.0 : f32
  %grad_out_cl_empty = tensor.empty() : !d_grad_out_cl
  %grad_out_cl = linalg.transpose ins(%grad_out : !d_grad_out) outs(%grad_out_cl_empty : !d_grad_out_cl) permutation = [0, 2, 3, 1]
  // one group: the phases read the weight as it is
  %d0_split = tensor.expand_shape %d0 [[0], [1, 2], [3], [4]] output_shape [16, 1, 64, 16, 16] : !d_d0 into tensor<16x1x64x16x16xf32>
  // every grad_in position is reached by exactly one phase: no initial value needed
  // Phase 0: taps f = 0 + 1*t (t < 1), 0 + 1*t (t < 1); writes grad_in positions 0 + 1*m (m < 16), 0 + 1*m (m < 16).
  %w_0_empty = tensor.empty() : tensor<1x1x64x64xf32>
  // the phase's taps, flipped (u = T-1-t), gathered with index arithmetic: llvm-cpu cannot tile an indexing map
  // with a negative coefficient
  %w_0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%w_0_empty : tensor<1x1x64x64xf32>) {
  ^bb0(%unused: f32):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (0 - u * 1)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (0 - u * 1)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %c, %f0, %f1] : !d_weight

    linalg.yield %tap : f32
  } -> tensor<1x1x64x64xf32>

  %acc_0_empty = tensor.empty() : tensor<16x16x16x64xf32>
  %acc_0_zero = linalg.fill ins(%zero : f32) outs(%acc_0_empty : tensor<16x16x16x64xf32>) -> tensor<16x16x16x64xf32>
  %acc_0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>}
      ins(%grad_out_cl, %w_0 : tensor<16x16x16x64xf32>, tensor<1x1x64x64xf32>) outs(%acc_0_zero : tensor<16x16x16x64xf32>) -> tensor<16x16x16x64xf32>
  %d0_phase_0 = tensor.extract_slice %d0_split[0, 0, 0, 0, 0] [16, 1, 64, 16, 16] [1, 1, 1, 1, 1] : tensor<16x1x64x16x16xf32> to tensor<16x1x64x16x16xf32>
  %store_0_empty = tensor.empty() : tensor<16x1x64x16x16xf32>
  %store_0 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0, m1) -> (n, m0, m1, c)>, affine_map<(n, g, c, m0, m1) -> (n, g, c, m0, m1)>, affine_map<(n, g, c, m0, m1) -> (n, g, c, m0, m1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_0, %d0_phase_0 : tensor<16x16x16x64xf32>, tensor<16x1x64x16x16xf32>) outs(%store_0_empty : tensor<16x1x64x16x16xf32>) {
  ^bb0(%acc: f32, %d0_value: f32, %unused: f32):
    %e0 = arith.constant 0.000000000e+00 : f32
    %e1 = arith.cmpf ole, %d0_value, %e0 : f32
    %e2 = arith.constant 0.000000000e+00 : f32
    %e3 = arith.select %e1, %e2, %acc : f32
    linalg.yield %e3 : f32
  } -> tensor<16x1x64x16x16xf32>
  %stored_0 = tensor.collapse_shape %store_0 [[0], [1, 2], [3], [4]] : tensor<16x1x64x16x16xf32> into tensor<16x64x16x16xf32>
  %grad_in_1 = tensor.insert_slice %stored_0 into %dst[0, 0, 0, 0] [16, 64, 16, 16] [1, 1, 1, 1] : tensor<16x64x16x16xf32> into !d_grad_in
  return %grad_in_1 : !d_grad_in
}


!w_x = tensor<16x64x16x16xf32>
!w_grad_out = tensor<16x64x16x16xf32>
!w_grad_w = tensor<64x64x1x1xf32>
!w_x_padded = tensor<16x64x16x16xf32>
!w_x_groups = tensor<16x1x64x16x16xf32>
!w_grad_out_groups = tensor<16x1x64x16x16xf32>
!w_partial = tensor<1x64x64x1x1xf32>
!w_partial_flat = tensor<64x64x1x1xf32>
!w_acc_flat = tensor<64x64x1x1xf32>

func.func private @weight(%x: !w_x, %grad_out: !w_grad_out, %dst: !w_grad_w) -> !w_grad_w {
  %zero = arith.constant 0.0 : f32
  // no padding is read: x is used as it is
  %x_groups = tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [16, 1, 64, 16, 16] : !w_x_padded into !w_x_groups
  %grad_out_groups = tensor.expand_shape %grad_out [[0], [1, 2], [3], [4]] output_shape [16, 1, 64, 16, 16] : !w_grad_out into !w_grad_out_groups
  // The im2col form's one matmul per group has K x F*C outputs and a reduction of N*O: few output tiles for two
  // cores when C is small (a first layer), and IREE does not split a reduction. Here each image is its own batch
  // entry, read where x and grad_out lie (channels-first: the output positions o last, no copy of grad_out):
  //     cols[n, g, c, f, o] = x_padded[n, g, c, s*o + d*f]
  //     per_image[(n, g), (c, f), k] = sum_o cols[(n, g), (c, f), o] * grad_out[(n, g), k, o]
  //     grad_w[g, k, c, f] = sum_n per_image[n, g, (c, f), k]
  %cols_empty = tensor.empty() : tensor<16x1x64x1x1x16x16xf32>
  %cols = linalg.generic {indexing_maps = [affine_map<(n, g, c, f0, f1, o0, o1) -> (n, g, c, o0 + f0, o1 + f1)>, affine_map<(n, g, c, f0, f1, o0, o1) -> (n, g, c, f0, f1, o0, o1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x_groups : !w_x_groups) outs(%cols_empty : tensor<16x1x64x1x1x16x16xf32>) {
  ^bb0(%xv: f32, %unused: f32):
    linalg.yield %xv : f32
  } -> tensor<16x1x64x1x1x16x16xf32>
  %cols_matrix = tensor.collapse_shape %cols [[0, 1], [2, 3, 4], [5, 6]] : tensor<16x1x64x1x1x16x16xf32> into tensor<16x64x256xf32>
  %grad_out_matrix = tensor.collapse_shape %grad_out_groups [[0, 1], [2], [3, 4]] : !w_grad_out_groups into tensor<16x64x256xf32>
  %per_image_empty = tensor.empty() : tensor<16x64x64xf32>
  %per_image_zero = linalg.fill ins(%zero : f32) outs(%per_image_empty : tensor<16x64x64xf32>) -> tensor<16x64x64xf32>
  %per_image = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, r) -> (b, m, r)>, affine_map<(b, m, n, r) -> (b, n, r)>, affine_map<(b, m, n, r) -> (b, m, n)>]
      ins(%cols_matrix, %grad_out_matrix : tensor<16x64x256xf32>, tensor<16x64x256xf32>) outs(%per_image_zero : tensor<16x64x64xf32>) -> tensor<16x64x64xf32>
  %per_image_taps = tensor.expand_shape %per_image [[0, 1], [2, 3, 4], [5]] output_shape [16, 1, 64, 1, 1, 64] : tensor<16x64x64xf32> into tensor<16x1x64x1x1x64xf32>
  %acc_groups_empty = tensor.empty() : tensor<1x64x64x1x1xf32>
  %acc_groups_zero = linalg.fill ins(%zero : f32) outs(%acc_groups_empty : tensor<1x64x64x1x1xf32>) -> tensor<1x64x64x1x1xf32>
  %acc_groups = linalg.generic {indexing_maps = [affine_map<(n, g, k, c, f0, f1) -> (n, g, c, f0, f1, k)>, affine_map<(n, g, k, c, f0, f1) -> (g, k, c, f0, f1)>], iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%per_image_taps : tensor<16x1x64x1x1x64xf32>) outs(%acc_groups_zero : tensor<1x64x64x1x1xf32>) {
  ^bb0(%p: f32, %sum: f32):
    %new_sum = arith.addf %sum, %p : f32
    linalg.yield %new_sum : f32
  } -> tensor<1x64x64x1x1xf32>
  %acc = tensor.collapse_shape %acc_groups [[0, 1], [2], [3], [4]] : tensor<1x64x64x1x1xf32> into !w_acc_flat
  %grad_w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : !w_acc_flat) outs(%dst : !w_grad_w) {
  ^bb0(%a: f32, %unused: f32):

    linalg.yield %a : f32
  } -> !w_grad_w
  return %grad_w : !w_grad_w
}


func.func @pair(%go: !d_grad_out, %w: !d_weight, %d0: !d_d0, %x: !w_x, %dst_in: !d_grad_in {iree.abi.output = 0 : index}, %dst_w: !w_grad_w {iree.abi.output = 1 : index}, %transients: !hal.buffer {iree.abi.transients}) -> (!d_grad_in, !w_grad_w) {
  %a = func.call @data(%go, %w, %d0, %dst_in) : (!d_grad_out, !d_weight, !d_d0, !d_grad_in) -> !d_grad_in
  %b = func.call @weight(%x, %go, %dst_w) : (!w_x, !d_grad_out, !w_grad_w) -> !w_grad_w
  return %a, %b : !d_grad_in, !w_grad_w
}
