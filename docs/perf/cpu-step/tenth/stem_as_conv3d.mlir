// cnn3d's stem weight gradient as linalg.conv_3d_ndhwc_dhwcf: batch c, channels n, grad_out the filter.
!x = tensor<4x3x8x32x32xf32>
!grad_out = tensor<4x16x8x32x32xf32>
!grad_w = tensor<16x3x3x3x3xf32>
func.func @main(%x: !x, %grad_out: !grad_out) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 0, 1, 1, 1] high[0, 0, 1, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : !x to tensor<4x3x10x34x34xf32>
  %ie = tensor.empty() : tensor<3x10x34x34x4xf32>
  %img = linalg.transpose ins(%xp : tensor<4x3x10x34x34xf32>) outs(%ie : tensor<3x10x34x34x4xf32>) permutation = [1, 2, 3, 4, 0]
  %fe = tensor.empty() : tensor<8x32x32x4x16xf32>
  %filt = linalg.transpose ins(%grad_out : !grad_out) outs(%fe : tensor<8x32x32x4x16xf32>) permutation = [2, 3, 4, 0, 1]
  %oe = tensor.empty() : tensor<3x3x3x3x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<3x3x3x3x16xf32>) -> tensor<3x3x3x3x16xf32>
  %o = linalg.conv_3d_ndhwc_dhwcf {dilations = dense<1> : tensor<3xi64>, strides = dense<1> : tensor<3xi64>}
      ins(%img, %filt : tensor<3x10x34x34x4xf32>, tensor<8x32x32x4x16xf32>) outs(%oz : tensor<3x3x3x3x16xf32>) -> tensor<3x3x3x3x16xf32>
  %ge = tensor.empty() : !grad_w
  %g = linalg.transpose ins(%o : tensor<3x3x3x3x16xf32>) outs(%ge : !grad_w) permutation = [4, 0, 1, 2, 3]
  return %g : !grad_w
}
