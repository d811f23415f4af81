// The weight flip of a bfloat16 stride-1 3x3 backward-data (conv_bwd_data's gather form, one phase): w_flipped[u0, u1,
// k, c] = w[k, 2 - u0, 2 - u1, c], gathered by tensor.extract at computed indices.
!weight = tensor<256x3x3x256xbf16>
!flipped = tensor<3x3x256x256xbf16>
func.func @flip(%weight: !weight) -> !flipped {
  %empty = tensor.empty() : !flipped
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%empty : !flipped) {
  ^bb0(%unused: bf16):
    %u0 = linalg.index 0 : index
    %f0 = affine.apply affine_map<(u) -> (2 - u)>(%u0)
    %u1 = linalg.index 1 : index
    %f1 = affine.apply affine_map<(u) -> (2 - u)>(%u1)
    %k = linalg.index 2 : index
    %c = linalg.index 3 : index
    %tap = tensor.extract %weight[%k, %f0, %f1, %c] : !weight
    linalg.yield %tap : bf16
  } -> !flipped
  return %w : !flipped
}
