!grad_out = tensor<4x32x4x16x16xf32>
!weight = tensor<32x4x3x3x3xf32>
!grad_in = tensor<4x16x4x16x16xf32>
func.func @f(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}, %transients: !hal.buffer {iree.abi.transients}) -> !grad_in {
  %zero = arith.constant 0.0 : f32
  %go = tensor.expand_shape %grad_out [[0], [1, 2], [3], [4], [5]] output_shape [4, 4, 8, 4, 16, 16] : !grad_out into tensor<4x4x8x4x16x16xf32>
  %gop = tensor.pad %go low[0, 0, 0, 1, 1, 1] high[0, 0, 0, 1, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index, %i5: index):
    tensor.yield %zero : f32
  } : tensor<4x4x8x4x16x16xf32> to tensor<4x4x8x6x18x18xf32>
  %cols_empty = tensor.empty() : tensor<4x4x8x3x3x3x4x16x16xf32>
  %cols = linalg.generic {indexing_maps = [affine_map<(n, g, k, u0, u1, u2, m0, m1, m2) -> (n, g, k, m0 + u0, m1 + u1, m2 + u2)>, affine_map<(n, g, k, u0, u1, u2, m0, m1, m2) -> (n, g, k, u0, u1, u2, m0, m1, m2)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%gop : tensor<4x4x8x6x18x18xf32>) outs(%cols_empty : tensor<4x4x8x3x3x3x4x16x16xf32>) {
  ^bb0(%x: f32, %unused: f32):
    linalg.yield %x : f32
  } -> tensor<4x4x8x3x3x3x4x16x16xf32>
  %cols_m = tensor.collapse_shape %cols [[0, 1], [2, 3, 4, 5], [6, 7, 8]] : tensor<4x4x8x3x3x3x4x16x16xf32> into tensor<16x216x1024xf32>
  %wg = tensor.expand_shape %weight [[0, 1], [2], [3], [4], [5]] output_shape [4, 8, 4, 3, 3, 3] : !weight into tensor<4x8x4x3x3x3xf32>
  %wb_empty = tensor.empty() : tensor<4x4x4x8x3x3x3xf32>
  %wb = linalg.generic {indexing_maps = [affine_map<(n, g, c, k, u0, u1, u2) -> (n, g, c, k, u0, u1, u2)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      outs(%wb_empty : tensor<4x4x4x8x3x3x3xf32>) {
  ^bb0(%unused: f32):
    %g = linalg.index 1 : index
    %c = linalg.index 2 : index
    %k = linalg.index 3 : index
    %u0 = linalg.index 4 : index
    %u1 = linalg.index 5 : index
    %u2 = linalg.index 6 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u)>(%u0)
    %f1 = affine.apply affine_map<(u) -> (2 - u)>(%u1)
    %f2 = affine.apply affine_map<(u) -> (2 - u)>(%u2)
    %tap = tensor.extract %wg[%g, %k, %c, %f0, %f1, %f2] : tensor<4x8x4x3x3x3xf32>
    linalg.yield %tap : f32
  } -> tensor<4x4x4x8x3x3x3xf32>
  %wb_m = tensor.collapse_shape %wb [[0, 1], [2], [3, 4, 5, 6]] : tensor<4x4x4x8x3x3x3xf32> into tensor<16x4x216xf32>
  %dst_split = tensor.expand_shape %dst [[0], [1, 2], [3], [4], [5]] output_shape [4, 4, 4, 4, 16, 16] : !grad_in into tensor<4x4x4x4x16x16xf32>
  %dst_m = tensor.collapse_shape %dst_split [[0, 1], [2], [3, 4, 5]] : tensor<4x4x4x4x16x16xf32> into tensor<16x4x1024xf32>
  %acc_zero = linalg.fill ins(%zero : f32) outs(%dst_m : tensor<16x4x1024xf32>) -> tensor<16x4x1024xf32>
  %acc = linalg.batch_matmul ins(%wb_m, %cols_m : tensor<16x4x216xf32>, tensor<16x216x1024xf32>) outs(%acc_zero : tensor<16x4x1024xf32>) -> tensor<16x4x1024xf32>
  %acc_split = tensor.expand_shape %acc [[0, 1], [2], [3, 4, 5]] output_shape [4, 4, 4, 4, 16, 16] : tensor<16x4x1024xf32> into tensor<4x4x4x4x16x16xf32>
  %out = tensor.collapse_shape %acc_split [[0], [1, 2], [3], [4], [5]] : tensor<4x4x4x4x16x16xf32> into !grad_in
  return %out : !grad_in
}
