// Hand-written (docs/perf/cpu-step/sixth/hand_variants.txt): resnext2d's max pooling backward in one pass, each grad_in
// element checking the four candidate windows at offsets {0,1}^2 of the padded grad_out and indices.
!grad_out = tensor<16x32x16x16xf32>
!grad_in = tensor<16x32x32x32xf32>
!padded_g = tensor<16x32x17x17xf32>
!padded_i = tensor<16x32x17x17xi64>
!slot_g = tensor<16x32x16x16xf32>
!slot_i = tensor<16x32x16x16xi64>
!grid = tensor<16x32x16x2x16x2xf32>
#in = affine_map<(n, c, qh, ph, qw, pw) -> (n, c, qh, qw)>
#out = affine_map<(n, c, qh, ph, qw, pw) -> (n, c, qh, ph, qw, pw)>
func.func @maxpool2d_bwd_nchw_float32_n16_c32_i32x32_o16x16_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64(%grad_out: !grad_out, %indices: !slot_i, %dst: !grad_in {iree.abi.output = 0 : index}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %none = arith.constant -1 : i64
  %gp = tensor.pad %grad_out low[0, 0, 0, 0] high[0, 0, 1, 1] {
  ^bb0(%p0: index, %p1: index, %p2: index, %p3: index):
    tensor.yield %zero : f32
  } : !grad_out to !padded_g
  %ip = tensor.pad %indices low[0, 0, 0, 0] high[0, 0, 1, 1] {
  ^bb0(%p0: index, %p1: index, %p2: index, %p3: index):
    tensor.yield %none : i64
  } : !slot_i to !padded_i
  %g00 = tensor.extract_slice %gp[0, 0, 0, 0] [16, 32, 16, 16] [1, 1, 1, 1] : !padded_g to !slot_g
  %g01 = tensor.extract_slice %gp[0, 0, 0, 1] [16, 32, 16, 16] [1, 1, 1, 1] : !padded_g to !slot_g
  %g10 = tensor.extract_slice %gp[0, 0, 1, 0] [16, 32, 16, 16] [1, 1, 1, 1] : !padded_g to !slot_g
  %g11 = tensor.extract_slice %gp[0, 0, 1, 1] [16, 32, 16, 16] [1, 1, 1, 1] : !padded_g to !slot_g
  %i00 = tensor.extract_slice %ip[0, 0, 0, 0] [16, 32, 16, 16] [1, 1, 1, 1] : !padded_i to !slot_i
  %i01 = tensor.extract_slice %ip[0, 0, 0, 1] [16, 32, 16, 16] [1, 1, 1, 1] : !padded_i to !slot_i
  %i10 = tensor.extract_slice %ip[0, 0, 1, 0] [16, 32, 16, 16] [1, 1, 1, 1] : !padded_i to !slot_i
  %i11 = tensor.extract_slice %ip[0, 0, 1, 1] [16, 32, 16, 16] [1, 1, 1, 1] : !padded_i to !slot_i
  %grid_dst = tensor.expand_shape %dst [[0], [1], [2, 3], [4, 5]] output_shape [16, 32, 16, 2, 16, 2] : !grad_in into !grid
  %grid = linalg.generic {indexing_maps = [#in, #in, #in, #in, #in, #in, #in, #in, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%g00, %i00, %g01, %i01, %g10, %i10, %g11, %i11 : !slot_g, !slot_i, !slot_g, !slot_i, !slot_g, !slot_i, !slot_g, !slot_i) outs(%grid_dst : !grid) {
  ^bb0(%a0: f32, %j0: i64, %a1: f32, %j1: i64, %a2: f32, %j2: i64, %a3: f32, %j3: i64, %unused: f32):
    %qh = linalg.index 2 : index
    %ph = linalg.index 3 : index
    %qw = linalg.index 4 : index
    %pw = linalg.index 5 : index
    %pos_index = affine.apply affine_map<(qh, ph, qw, pw) -> ((qh * 2 + ph) * 32 + qw * 2 + pw)>(%qh, %ph, %qw, %pw)
    %pos = arith.index_cast %pos_index : index to i64
    %h0 = arith.cmpi eq, %j0, %pos : i64
    %s0 = arith.select %h0, %a0, %zero : f32
    %h1 = arith.cmpi eq, %j1, %pos : i64
    %t1 = arith.addf %s0, %a1 : f32
    %s1 = arith.select %h1, %t1, %s0 : f32
    %h2 = arith.cmpi eq, %j2, %pos : i64
    %t2 = arith.addf %s1, %a2 : f32
    %s2 = arith.select %h2, %t2, %s1 : f32
    %h3 = arith.cmpi eq, %j3, %pos : i64
    %t3 = arith.addf %s2, %a3 : f32
    %s3 = arith.select %h3, %t3, %s2 : f32
    linalg.yield %s3 : f32
  } -> !grid
  %grad_in = tensor.collapse_shape %grid [[0], [1], [2, 3], [4, 5]] : !grid into !grad_in
  return %grad_in : !grad_in
}
