// cnn3d's stem weight gradient as IREE's own 2-D convolution (linalg.conv_2d_nhwc_hwcf, its CPU pipeline
// ConvTileAndDecomposeExpert): batch (kd, c), channels (n, d), the image x_padded's (h, w) at depth d + kd, the
// filter grad_out's (h, w) for channels (n, d) and k, the output (kh, kw, k).
!x = tensor<4x3x8x32x32xf32>
!grad_out = tensor<4x16x8x32x32xf32>
!grad_w = tensor<16x3x3x3x3xf32>
func.func @main(%x: !x, %grad_out: !grad_out) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 0, 1, 1, 1] high[0, 0, 1, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : !x to tensor<4x3x10x34x34xf32>
  // image[kd, c, h, w, (n, d)] = x_padded[n, c, d + kd, h, w]
  %img_empty = tensor.empty() : tensor<3x3x34x34x4x8xf32>
  %img = linalg.generic {indexing_maps = [affine_map<(kd, c, h, w, n, d) -> (n, c, d + kd, h, w)>, affine_map<(kd, c, h, w, n, d) -> (kd, c, h, w, n, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%xp : tensor<4x3x10x34x34xf32>) outs(%img_empty : tensor<3x3x34x34x4x8xf32>) {
  ^bb0(%v: f32, %u: f32):
    linalg.yield %v : f32
  } -> tensor<3x3x34x34x4x8xf32>
  %img2 = tensor.collapse_shape %img [[0, 1], [2], [3], [4, 5]] : tensor<3x3x34x34x4x8xf32> into tensor<9x34x34x32xf32>
  // filter[h, w, (n, d), k] = grad_out[n, k, d, h, w]
  %fe = tensor.empty() : tensor<32x32x4x8x16xf32>
  %filt = linalg.transpose ins(%grad_out : !grad_out) outs(%fe : tensor<32x32x4x8x16xf32>) permutation = [3, 4, 0, 2, 1]
  %filt2 = tensor.collapse_shape %filt [[0], [1], [2, 3], [4]] : tensor<32x32x4x8x16xf32> into tensor<32x32x32x16xf32>
  %oe = tensor.empty() : tensor<9x3x3x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<9x3x3x16xf32>) -> tensor<9x3x3x16xf32>
  %o = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%img2, %filt2 : tensor<9x34x34x32xf32>, tensor<32x32x32x16xf32>) outs(%oz : tensor<9x3x3x16xf32>) -> tensor<9x3x3x16xf32>
  %o5 = tensor.expand_shape %o [[0, 1], [2], [3], [4]] output_shape [3, 3, 3, 3, 16] : tensor<9x3x3x16xf32> into tensor<3x3x3x3x16xf32>
  %ge = tensor.empty() : !grad_w
  %g = linalg.transpose ins(%o5 : tensor<3x3x3x3x16xf32>) outs(%ge : !grad_w) permutation = [4, 1, 0, 2, 3]
  return %g : !grad_w
}
