// As stem_as_conv2d.mlir with linalg.conv_2d_nchw_fchw: x's windows and grad_out keep (h, w) innermost.
!x = tensor<4x3x8x32x32xf32>
!grad_out = tensor<4x16x8x32x32xf32>
!grad_w = tensor<16x3x3x3x3xf32>
func.func @main(%x: !x, %grad_out: !grad_out) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 0, 1, 1, 1] high[0, 0, 1, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : !x to tensor<4x3x10x34x34xf32>
  %img_empty = tensor.empty() : tensor<3x3x4x8x34x34xf32>
  %img = linalg.generic {indexing_maps = [affine_map<(kd, c, n, d, h, w) -> (n, c, d + kd, h, w)>, affine_map<(kd, c, n, d, h, w) -> (kd, c, n, d, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%xp : tensor<4x3x10x34x34xf32>) outs(%img_empty : tensor<3x3x4x8x34x34xf32>) {
  ^bb0(%v: f32, %u: f32):
    linalg.yield %v : f32
  } -> tensor<3x3x4x8x34x34xf32>
  %img2 = tensor.collapse_shape %img [[0, 1], [2, 3], [4], [5]] : tensor<3x3x4x8x34x34xf32> into tensor<9x32x34x34xf32>
  %fe = tensor.empty() : tensor<16x4x8x32x32xf32>
  %filt = linalg.transpose ins(%grad_out : !grad_out) outs(%fe : tensor<16x4x8x32x32xf32>) permutation = [1, 0, 2, 3, 4]
  %filt2 = tensor.collapse_shape %filt [[0], [1, 2], [3], [4]] : tensor<16x4x8x32x32xf32> into tensor<16x32x32x32xf32>
  %oe = tensor.empty() : tensor<9x16x3x3xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<9x16x3x3xf32>) -> tensor<9x16x3x3xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%img2, %filt2 : tensor<9x32x34x34xf32>, tensor<16x32x32x32xf32>) outs(%oz : tensor<9x16x3x3xf32>) -> tensor<9x16x3x3xf32>
  %o5 = tensor.expand_shape %o [[0, 1], [2], [3], [4]] output_shape [3, 3, 16, 3, 3] : tensor<9x16x3x3xf32> into tensor<3x3x16x3x3xf32>
  %ge = tensor.empty() : !grad_w
  %g = linalg.transpose ins(%o5 : tensor<3x3x16x3x3xf32>) outs(%ge : !grad_w) permutation = [2, 1, 0, 3, 4]
  return %g : !grad_w
}
