// Max-pool 2-D forward with PyTorch's indices, layout ${layout}.
//
// Per spatial axis (s stride, d dilation, p_lo low padding), window o reads the taps
//     i = s*o + d*f - p_lo,   f < k,   skipping taps outside the input (in the padding).
// y[n, c, o] is the window's maximum and indices[n, c, o] its flat position h*W + w inside the (n, c) plane,
// as torch.nn.functional.max_pool2d(..., return_indices=True) gives them.
//
// One linalg.generic: the output grid (in the layout's order, so channels-first needs no transpose) is
// parallel, the window taps are reduction dims sized by the shape-only operand !taps. The tap position is
// computed in the body from linalg.index values (an indexing map with the negative -p_lo would break
// llvm-cpu tiling) and the tensor.extract index is clamped into the input even for skipped taps.
//
// Problem: ${problem_name}

!x = ${x_type}
!window_max = ${y_type}
!argmax = ${indices_type}
!taps = ${taps_type}

func.func @${function}(%x: !x, %y_dst: !window_max {iree.abi.output = 0 : index}, %indices_dst: !argmax {iree.abi.output = 1 : index}) -> (!window_max, !argmax) {
  %neg_inf = arith.constant ${neg_inf} : ${element}
  %no_position = arith.constant ${no_position} : ${index_type}
${argmax}
  return %max, %indices : !window_max, !argmax
}
