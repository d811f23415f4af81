// cnn3d's stem weight gradient (x 4x3x8x32x32, grad_out 4x16x8x32x32, 3x3x3, padding 1), the kw taps as shifts:
// x's windows gathered over (c, kd, kh) only, along rows padded to 34 (27 rows instead of 81), and grad_out laid out
// (positions, k) with a zero row in front and two zero columns per row, so that tap kw is a slice of it offset by
// 34 - kw positions: three batch_matmuls of 27 rows reading the same gathered rows.
!x = tensor<4x3x8x32x32xf32>
!grad_out = tensor<4x16x8x32x32xf32>
!grad_w = tensor<16x3x3x3x3xf32>
func.func @main(%x: !x, %grad_out: !grad_out) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %x_padded = tensor.pad %x low[0, 0, 1, 1, 1] high[0, 0, 1, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : !x to tensor<4x3x10x34x34xf32>
  %cols_empty = tensor.empty() : tensor<4x3x3x3x8x32x34xf32>
  %cols = linalg.generic {indexing_maps = [affine_map<(n, c, f0, f1, o0, o1, w) -> (n, c, o0 + f0, o1 + f1, w)>, affine_map<(n, c, f0, f1, o0, o1, w) -> (n, c, f0, f1, o0, o1, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x_padded : tensor<4x3x10x34x34xf32>) outs(%cols_empty : tensor<4x3x3x3x8x32x34xf32>) {
  ^bb0(%xv: f32, %unused: f32):
    linalg.yield %xv : f32
  } -> tensor<4x3x3x3x8x32x34xf32>
  %cols_matrix = tensor.collapse_shape %cols [[0], [1, 2, 3], [4, 5, 6]] : tensor<4x3x3x3x8x32x34xf32> into tensor<4x27x8704xf32>
  %gt_empty = tensor.empty() : tensor<4x8x32x32x16xf32>
  %gt = linalg.transpose ins(%grad_out : !grad_out) outs(%gt_empty : tensor<4x8x32x32x16xf32>) permutation = [0, 2, 3, 4, 1]
  %gt4 = tensor.collapse_shape %gt [[0], [1, 2], [3], [4]] : tensor<4x8x32x32x16xf32> into tensor<4x256x32x16xf32>
  %gpe = tensor.empty() : tensor<4x257x34x16xf32>
  %gpz = linalg.fill ins(%zero : f32) outs(%gpe : tensor<4x257x34x16xf32>) -> tensor<4x257x34x16xf32>
  %gin = tensor.insert_slice %gt4 into %gpz[0, 1, 0, 0] [4, 256, 32, 16] [1, 1, 1, 1] : tensor<4x256x32x16xf32> into tensor<4x257x34x16xf32>
  %gp = tensor.collapse_shape %gin [[0], [1, 2], [3]] : tensor<4x257x34x16xf32> into tensor<4x8738x16xf32>
  %pe = tensor.empty() : tensor<4x27x16xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<4x27x16xf32>) -> tensor<4x27x16xf32>
  %s0 = tensor.extract_slice %gp[0, 34, 0] [4, 8704, 16] [1, 1, 1] : tensor<4x8738x16xf32> to tensor<4x8704x16xf32>
  %s1 = tensor.extract_slice %gp[0, 33, 0] [4, 8704, 16] [1, 1, 1] : tensor<4x8738x16xf32> to tensor<4x8704x16xf32>
  %s2 = tensor.extract_slice %gp[0, 32, 0] [4, 8704, 16] [1, 1, 1] : tensor<4x8738x16xf32> to tensor<4x8704x16xf32>
  %p0 = linalg.batch_matmul ins(%cols_matrix, %s0 : tensor<4x27x8704xf32>, tensor<4x8704x16xf32>) outs(%pz : tensor<4x27x16xf32>) -> tensor<4x27x16xf32>
  %p1 = linalg.batch_matmul ins(%cols_matrix, %s1 : tensor<4x27x8704xf32>, tensor<4x8704x16xf32>) outs(%pz : tensor<4x27x16xf32>) -> tensor<4x27x16xf32>
  %p2 = linalg.batch_matmul ins(%cols_matrix, %s2 : tensor<4x27x8704xf32>, tensor<4x8704x16xf32>) outs(%pz : tensor<4x27x16xf32>) -> tensor<4x27x16xf32>
  %p0e = tensor.expand_shape %p0 [[0], [1, 2, 3], [4]] output_shape [4, 3, 3, 3, 16] : tensor<4x27x16xf32> into tensor<4x3x3x3x16xf32>
  %p1e = tensor.expand_shape %p1 [[0], [1, 2, 3], [4]] output_shape [4, 3, 3, 3, 16] : tensor<4x27x16xf32> into tensor<4x3x3x3x16xf32>
  %p2e = tensor.expand_shape %p2 [[0], [1, 2, 3], [4]] output_shape [4, 3, 3, 3, 16] : tensor<4x27x16xf32> into tensor<4x3x3x3x16xf32>
  %ae = tensor.empty() : !grad_w
  %az = linalg.fill ins(%zero : f32) outs(%ae : !grad_w) -> !grad_w
  %acc = linalg.generic {indexing_maps = [affine_map<(n, k, c, f0, f1, f2) -> (n, c, f0, f1, k)>, affine_map<(n, k, c, f0, f1, f2) -> (n, c, f0, f1, k)>, affine_map<(n, k, c, f0, f1, f2) -> (n, c, f0, f1, k)>, affine_map<(n, k, c, f0, f1, f2) -> (k, c, f0, f1, f2)>], iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%p0e, %p1e, %p2e : tensor<4x3x3x3x16xf32>, tensor<4x3x3x3x16xf32>, tensor<4x3x3x3x16xf32>) outs(%az : !grad_w) {
  ^bb0(%a0: f32, %a1: f32, %a2: f32, %sum: f32):
    %f2 = linalg.index 5 : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %is0 = arith.cmpi eq, %f2, %c0 : index
    %is1 = arith.cmpi eq, %f2, %c1 : index
    %v12 = arith.select %is1, %a1, %a2 : f32
    %v = arith.select %is0, %a0, %v12 : f32
    %new = arith.addf %sum, %v : f32
    linalg.yield %new : f32
  } -> !grad_w
  return %acc : !grad_w
}
