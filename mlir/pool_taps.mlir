// The pooling forwards' taps as slices of their input padded once (maxpool2d_fwd's and avgpool3d_fwd's tap
// scans): each tap's values over every window are one slice, read by the scan's identity maps, so the scan is one
// elementwise linalg.generic with no tensor.extract. Per spatial axis (s stride, d dilation, p_lo low padding),
// window o's tap f reads i = s*o + d*f - p_lo; padded taps hold the pad value, which the scans mask or which adds
// nothing. ops/operators/pool_windows.py (tap_source) picks the fragment and computes its values. Below them, the
// ReLU both forwards apply to each tap they read, where one is fused.

// fragment tap_pad: the input padded: window o's tap f reads x_padded[.., s*o + d*f, ..], a strided slice
%x_padded = tensor.pad %x low[${pad_low}] high[${pad_high}] {
^bb0(${pad_indices}):
  tensor.yield ${pad_value} : ${element}
} : !x to ${x_padded_type}

// fragment tap_phases: the input split by stride phase along W, its innermost axis, and padded by one fill
// The split along W (stride ${stride}): x_padded[.., r, q] = x[.., ${stride}*(q - ${front}) + r] (the outer axes padded as
// tensor.pad would). Window o's tap f reads w = s*o + d*f - p_lo, which is phase (d*f - p_lo) mod s at
// q = o + (d*f - p_lo) floordiv s + ${front}: a unit-stride slice along o (a strided slice is read one element at
// a time)
%x_split = tensor.expand_shape %x [${reassociation}] output_shape [${split_shape}] : !x into ${x_split_type}
%x_phases_empty = tensor.empty() : ${x_phases_type}
%x_phases = linalg.transpose ins(%x_split : ${x_split_type}) outs(%x_phases_empty : ${x_phases_type}) permutation = [${permutation}]
%x_padded_empty = tensor.empty() : ${x_padded_type}
%x_padded_fill = linalg.fill ins(${pad_value} : ${element}) outs(%x_padded_empty : ${x_padded_type}) -> ${x_padded_type}
%x_padded = tensor.insert_slice %x_phases into %x_padded_fill[${insert_offsets}] [${phases_shape}] [${unit_strides}] : ${x_phases_type} into ${x_padded_type}

// fragment tap_slice: tap ${t}'s slice of the padded input: its windows' values
%x_tap${t} = tensor.extract_slice %x_padded[${offsets}] [${sizes}] [${strides}] : ${x_padded_type} to ${window_type}

// fragment relu: tap value ${v} through the ReLU before the pooling, as PyTorch's relu computes it: 0 below 0, else
// the value itself (-0 and NaN kept)
%relu_zero${t} = arith.constant 0.0 : ${element}
${v}_below = arith.cmpf olt, ${v}, %relu_zero${t} : ${element}
${v}_relu = arith.select ${v}_below, %relu_zero${t}, ${v} : ${element}
