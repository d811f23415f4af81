!grad_out = tensor<16x32x16x16xf32>
!weight = tensor<32x4x3x3xf32>
!grad_in = tensor<16x32x16x16xf32>
!d0 = tensor<16x32x16x16xf32>
func.func @fA(%grad_out: !grad_out, %weight: !weight, %d0: !d0, %dst: !grad_in {iree.abi.output = 0 : index}, %transients: !hal.buffer {iree.abi.transients}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %go = tensor.expand_shape %grad_out [[0], [1, 2], [3], [4]] output_shape [16, 8, 4, 16, 16] : !grad_out into tensor<16x8x4x16x16xf32>
  %gop = tensor.pad %go low[0, 0, 0, 1, 1] high[0, 0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : tensor<16x8x4x16x16xf32> to tensor<16x8x4x18x18xf32>
  %wg = tensor.expand_shape %weight [[0, 1], [2], [3], [4]] output_shape [8, 4, 4, 3, 3] : !weight into tensor<8x4x4x3x3xf32>
  %wf_empty = tensor.empty() : tensor<8x4x4x3x3xf32>
  %wf = linalg.generic {indexing_maps = [affine_map<(g, c, k, u0, u1) -> (g, c, k, u0, u1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      outs(%wf_empty : tensor<8x4x4x3x3xf32>) {
  ^bb0(%unused: f32):
    %g = linalg.index 0 : index
    %c = linalg.index 1 : index
    %k = linalg.index 2 : index
    %u0 = linalg.index 3 : index
    %u1 = linalg.index 4 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u)>(%u0)
    %f1 = affine.apply affine_map<(u) -> (2 - u)>(%u1)
    %tap = tensor.extract %wg[%g, %k, %c, %f0, %f1] : tensor<8x4x4x3x3xf32>
    linalg.yield %tap : f32
  } -> tensor<8x4x4x3x3xf32>
  %acc_empty = tensor.empty() : tensor<16x8x4x16x16xf32>
  %acc_zero = linalg.fill ins(%zero : f32) outs(%acc_empty : tensor<16x8x4x16x16xf32>) -> tensor<16x8x4x16x16xf32>
  %acc4 = linalg.generic {indexing_maps = [affine_map<(n, g, c, m0, m1, k, u0, u1) -> (n, g, k, m0 + u0, m1 + u1)>, affine_map<(n, g, c, m0, m1, k, u0, u1) -> (g, c, k, u0, u1)>, affine_map<(n, g, c, m0, m1, k, u0, u1) -> (n, g, c, m0, m1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [1, 8, 4, 16, 16, 0, 0, 0], vector_common_parallel = [1, 1, 4, 1, 16, 0, 0, 0], vector_reduction = [0, 0, 0, 0, 0, 1, 1, 1]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>}
      ins(%gop, %wf : tensor<16x8x4x18x18xf32>, tensor<8x4x4x3x3xf32>) outs(%acc_zero : tensor<16x8x4x16x16xf32>) {
  ^bb0(%x: f32, %w: f32, %a: f32):
    %m = arith.mulf %x, %w : f32
    %sum = arith.addf %a, %m : f32
    linalg.yield %sum : f32
  } -> tensor<16x8x4x16x16xf32>
  %accf = tensor.collapse_shape %acc4 [[0], [1, 2], [3], [4]] : tensor<16x8x4x16x16xf32> into tensor<16x32x16x16xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%accf, %d0 : tensor<16x32x16x16xf32>, !d0) outs(%dst : !grad_in) {
  ^bb0(%a: f32, %d: f32, %unused: f32):
    %le = arith.cmpf ole, %d, %zero : f32
    %v = arith.select %le, %zero, %a : f32
    linalg.yield %v : f32
  } -> !grad_in
  return %out : !grad_in
}
