// cnn3d's stem weight gradient, every tap a flat shift: positions counted in x_padded's own (d, h, w) grid, each
// tap (kd, kh, kw) is x_padded's flattened rows shifted by kd*34*34 + kh*34 + kw, and grad_out padded to that
// grid (zeros where a position is padding) multiplies only real positions. The gather is one affine map with a
// contiguous inner axis; one batch_matmul of 81 rows.
!x = tensor<4x3x8x32x32xf32>
!grad_out = tensor<4x16x8x32x32xf32>
!grad_w = tensor<16x3x3x3x3xf32>
func.func @main(%x: !x, %grad_out: !grad_out) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 0, 1, 1, 1] high[0, 0, 2, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : !x to tensor<4x3x11x34x34xf32>
  %xf = tensor.collapse_shape %xp [[0], [1], [2, 3, 4]] : tensor<4x3x11x34x34xf32> into tensor<4x3x12716xf32>
  %cols_empty = tensor.empty() : tensor<4x3x3x3x3x9216xf32>
  %cols = linalg.generic {indexing_maps = [affine_map<(n, c, t0, t1, t2, o) -> (n, c, o + t0 * 1156 + t1 * 34 + t2)>, affine_map<(n, c, t0, t1, t2, o) -> (n, c, t0, t1, t2, o)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%xf : tensor<4x3x12716xf32>) outs(%cols_empty : tensor<4x3x3x3x3x9216xf32>) {
  ^bb0(%xv: f32, %unused: f32):
    linalg.yield %xv : f32
  } -> tensor<4x3x3x3x3x9216xf32>
  %cm = tensor.collapse_shape %cols [[0], [1, 2, 3, 4], [5]] : tensor<4x3x3x3x3x9216xf32> into tensor<4x81x9216xf32>
  %gp = tensor.pad %grad_out low[0, 0, 0, 0, 0] high[0, 0, 0, 2, 2] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : !grad_out to tensor<4x16x8x34x34xf32>
  %gpf = tensor.collapse_shape %gp [[0], [1], [2, 3, 4]] : tensor<4x16x8x34x34xf32> into tensor<4x16x9248xf32>
  %gps = tensor.extract_slice %gpf[0, 0, 0] [4, 16, 9216] [1, 1, 1] : tensor<4x16x9248xf32> to tensor<4x16x9216xf32>
  %gt_empty = tensor.empty() : tensor<4x9216x16xf32>
  %gt = linalg.transpose ins(%gps : tensor<4x16x9216xf32>) outs(%gt_empty : tensor<4x9216x16xf32>) permutation = [0, 2, 1]
  %pe = tensor.empty() : tensor<4x81x16xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<4x81x16xf32>) -> tensor<4x81x16xf32>
  %p = linalg.batch_matmul ins(%cm, %gt : tensor<4x81x9216xf32>, tensor<4x9216x16xf32>) outs(%pz : tensor<4x81x16xf32>) -> tensor<4x81x16xf32>
  %pt = tensor.expand_shape %p [[0], [1, 2, 3, 4], [5]] output_shape [4, 3, 3, 3, 3, 16] : tensor<4x81x16xf32> into tensor<4x3x3x3x3x16xf32>
  %ae = tensor.empty() : !grad_w
  %az = linalg.fill ins(%zero : f32) outs(%ae : !grad_w) -> !grad_w
  %acc = linalg.generic {indexing_maps = [affine_map<(n, k, c, f0, f1, f2) -> (n, c, f0, f1, f2, k)>, affine_map<(n, k, c, f0, f1, f2) -> (k, c, f0, f1, f2)>], iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%pt : tensor<4x3x3x3x3x16xf32>) outs(%az : !grad_w) {
  ^bb0(%a: f32, %sum: f32):
    %new = arith.addf %sum, %a : f32
    linalg.yield %new : f32
  } -> !grad_w
  return %acc : !grad_w
}
