// Grouped convolution backward-data of a depthwise filter (CK example 38_grouped_conv_bwd_data_multiple_d, one
// channel a group, no D tensors), every stride phase in one linalg.generic: ${rank}-D, layout ${layout}.
//
// Along each spatial axis the forward convolution reads s*o + f = i + p_lo (dilation 1). Write grad_in's position
// as i = s*m + r (row m, residue r < s): the taps reaching it are f = r + p_lo - s*(o - m), so
//     grad_in[n, s*m + r, g] = sum_u grad_out[n, m + shift + u, g] * w[g, first_tap + r - s*u]      (u < taps)
// where shift is the least o - m any (r, f) gives and taps the span of o - m (ops/geometry.py, merged_phase_axis),
// and a tap outside [0, F) adds nothing (its product is selected away, so that an infinite grad_out meets no zero
// weight: the terms are the definition's, as in the stride-phase form). So grad_in, viewed phase-major as (m, r)
// per axis (a free expand_shape: each size divides by its stride; m alone along an axis of stride 1, where r = 0:
// IREE folds a unit dim away and rebuilds the contraction without its pinned tile), is one depthwise contraction
// of the zero-padded grad_out with the phase filter wp[r, u, g] = w[g, first_tap + r - s*u] (zero off the filter):
// each position written once, all phases in one dispatch, where the stride-phase form (mlir/conv_bwd_data.mlir)
// takes a convolution per phase and an interleave. The price: a phase with fewer taps than the others multiplies zeros
// (3x3 stride 2: 16 products for a 2x2 block of positions that 9 reach), cheap where the layer is bound by memory,
// as depthwise ones are.
//
// Problem: ${problem_name}

!grad_out = ${grad_out_type}
!weight = ${weight_type}
!grad_in = ${grad_in_type}
!padded = ${padded_type}
!filter = ${filter_type}
!on = ${on_type}
!view = ${view_type}

func.func @${function}(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index}${transients}) -> !grad_in {
  %zero = arith.constant 0.0 : ${element}
  %zero_acc = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
${pad}
  // the phase filter: wp[.., r, u, ..] = w[g, first_tap + r - s*u] along each axis, zero where a tap is off the filter
  %filter_empty = tensor.empty() : !filter
  %filter = linalg.generic {indexing_maps = [${filter_map}], iterator_types = ${filter_iterators}}
      outs(%filter_empty : !filter) {
  ^bb0(%unused: ${element}):
${filter_taps}
    %tap = tensor.extract %weight[${extract}] : !weight
    %value = arith.select ${on_filter}, %tap, %zero : ${element}
    linalg.yield %value : ${element}
  } -> !filter
${on}
  %view = tensor.expand_shape %dst ${reassociation} output_shape [${view_shape}] : !grad_in into !view
${accumulate}
  %grad_in = tensor.collapse_shape %result ${reassociation} : !view into !grad_in
  return %grad_in : !grad_in
}

// fragment tap_mask: the masked contraction's constant (strided: some (r, u) fall off the filter)
  // whether each (r, u) of every axis is a tap on the filter (1) or not (0)
  %on = arith.constant dense<${on_values}> : !on

// fragment filter_tap: one axis's tap of the phase filter, f = first_tap + r - s*u, and whether it is on the filter
    %r${axis} = ${residue} : index
    %u${axis} = linalg.index ${u_dim} : index
    %f${axis} = affine.apply affine_map<(r, u) -> (r - u * ${stride} + ${first_tap})>(%r${axis}, %u${axis})
    %window${axis} = arith.constant ${window} : index
    %on${axis} = arith.cmpi ult, %f${axis}, %window${axis} : index
    %f${axis}_read = arith.select %on${axis}, %f${axis}, %c0 : index

// fragment contraction: grad_in's phase-major view += the padded grad_out's window times the phase filter
  ${result} = linalg.generic {indexing_maps = [${read_map}, ${filter_read_map}, ${on_read_map}, ${view_map}], iterator_types = ${iterators}}
      ins(%padded, %filter, %on : !padded, !filter, !on) outs(${acc_init} : ${acc_type})${config} {
  ^bb0(%g_read: ${element}, %w: ${element}, %on_byte: i8, %sum: f32):
    // a tap off the filter reads no grad_out (its phase-filter zero times an infinity would be NaN); whether it is on
    // comes as data: IREE 3.13 miscompiled the same select made of linalg.index in this body where a dim had size 1
    %tap_on = arith.trunci %on_byte : i8 to i1
    %g = arith.select %tap_on, %g_read, %zero : ${element}
${widen}
${multiply_add}
    linalg.yield %new_sum : f32
  } -> ${acc_type}

// fragment contraction_every_tap: the same where every (r, u) is a tap on the filter (stride 1 along each axis): no
// mask (IREE folds a constant mask of ones into the body, rebuilding the contraction without its pinned tile)
  ${result} = linalg.generic {indexing_maps = [${read_map}, ${filter_read_map}, ${view_map}], iterator_types = ${iterators}}
      ins(%padded, %filter : !padded, !filter) outs(${acc_init} : ${acc_type})${config} {
  ^bb0(%g: ${element}, %w: ${element}, %sum: f32):
${widen}
${multiply_add}
    linalg.yield %new_sum : f32
  } -> ${acc_type}

// fragment contraction_in_place: the same reading grad_out where it lies, at m + u + shift along each axis clamped
// onto it, zero selected off it (and, strided, where the tap is off the filter, the mask as data): no padded copy
// (IREE writes an unfused pad in a dispatch of its own, and fused it into this contraction 1.7-3.2x slower at stride
// 1, channels-last on an H200)
  ${result} = linalg.generic {indexing_maps = [${in_place_maps}, ${view_map}], iterator_types = ${iterators}}
      ins(${in_place_ins}) outs(${acc_init} : ${acc_type})${config} {
  ^bb0(%w: ${element},${mask_arg} %sum: f32):
    %n = linalg.index 0 : index
    %grp = linalg.index ${group_dim} : index
${positions}
    %g_read = tensor.extract %grad_out[${grad_out_index}] : !grad_out
    %g = arith.select ${on_grad_out}, %g_read, %zero : ${element}
${widen}
${multiply_add}
    linalg.yield %new_sum : f32
  } -> ${acc_type}

// fragment read_position: one axis's grad_out position o = m + u + shift, whether it lies on grad_out (unsigned: a
// position before it is a huge one), the position clamped onto it
    %m${axis} = linalg.index ${m_dim} : index
    %u${axis} = linalg.index ${u_dim} : index
    %o${axis} = affine.apply affine_map<(m, u) -> (${position})>(%m${axis}, %u${axis})
${on_and_clamped}

// fragment accumulate_f32: float32 sums straight into grad_in's view
  %view_zero = linalg.fill ins(%zero_acc : f32) outs(%view : !view) -> !view
${contraction}

// fragment accumulate_narrow: float32 sums, then narrowed into grad_in's view
  %acc_empty = tensor.empty() : ${acc_type}
  %acc_zero = linalg.fill ins(%zero_acc : f32) outs(%acc_empty : ${acc_type}) -> ${acc_type}
${contraction}
  %result = linalg.generic {indexing_maps = [${view_map_plain}, ${view_map_plain}], iterator_types = ${view_iterators}}
      ins(%result_acc : ${acc_type}) outs(%view : !view) {
  ^bb0(%value: f32, %unused: ${element}):
    %stored = arith.truncf %value : f32 to ${element}
    linalg.yield %stored : ${element}
  } -> !view
