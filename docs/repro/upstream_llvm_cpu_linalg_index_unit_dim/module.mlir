// IREE 3.13, llvm-cpu: a reduction generic whose body reads linalg.index, with a unit dim (batch 1).
// out[n, i, r, j, q, g] = sum_(u, v) (tap on ? pad[n, i+u, j+v, g] : 0) * w[r, u, q, v, g]
// where "tap on" = (r + 1 - 2u) in [0, 3) and (q + 1 - 2v) in [0, 3), computed from linalg.index.
func.func @m(%grad_out: tensor<1x2x2x2xf32>, %w: tensor<2x2x2x2x2xf32>) -> tensor<1x2x2x2x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %c3 = arith.constant 3 : index
  %pad = tensor.pad %grad_out low[0, 0, 0, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x2x2x2xf32> to tensor<1x3x3x2xf32>
  %e = tensor.empty() : tensor<1x2x2x2x2x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x2x2x2x2xf32>) -> tensor<1x2x2x2x2x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, i, r, j, q, g, u, v) -> (n, i + u, j + v, g)>, affine_map<(n, i, r, j, q, g, u, v) -> (r, u, q, v, g)>, affine_map<(n, i, r, j, q, g, u, v) -> (n, i, r, j, q, g)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%pad, %w : tensor<1x3x3x2xf32>, tensor<2x2x2x2x2xf32>) outs(%z : tensor<1x2x2x2x2x2xf32>) {
  ^bb0(%gv: f32, %wv: f32, %acc: f32):
    %ri = linalg.index 2 : index
    %ui = linalg.index 6 : index
    %qi = linalg.index 4 : index
    %vi = linalg.index 7 : index
    %f0 = affine.apply affine_map<(r, u) -> (r - u * 2 + 1)>(%ri, %ui)
    %f1 = affine.apply affine_map<(r, u) -> (r - u * 2 + 1)>(%qi, %vi)
    %on0 = arith.cmpi ult, %f0, %c3 : index
    %on1 = arith.cmpi ult, %f1, %c3 : index
    %on = arith.andi %on0, %on1 : i1
    %g = arith.select %on, %gv, %zero : f32
    %p = arith.mulf %g, %wv : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x2x2x2x2x2xf32>
  return %r : tensor<1x2x2x2x2x2xf32>
}
