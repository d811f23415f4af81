${about}
// Problem: ${function}

${inner_module}
func.func @${function}(%x: ${x_type}, %grad_out: ${grad_out_type}, %dst: ${grad_w_type} {iree.abi.output = 0 : index}${transients}) -> ${grad_w_type} {
${split_x}
${split_grad_out}
  %inner_empty = tensor.empty() : ${inner_grad_w_type}
  %inner = func.call @${inner}(${x3}, %grad_out3, %inner_empty) : (${x3_type}, ${grad_out3_type}, ${inner_grad_w_type}) -> ${inner_grad_w_type}
${store}
  return %grad_w : ${grad_w_type}
}

// fragment split: ${v} split into its bfloat16 parts, stacked along an axis j (part j is lo where j = ${lo_part}, else hi) in channels-last order
  %${v}_parts_empty = tensor.empty() : ${parts_type}
  %${v}_parts = linalg.generic {indexing_maps = [${read_map}, ${write_map}], iterator_types = ${iterators}}
      ins(%${v} : ${in_type}) outs(%${v}_parts_empty : ${parts_type})${attrs} {
  ^bb0(%value: f32, %unused: bf16):
    %j = linalg.index ${part_dim} : index
    %lo_part = arith.constant ${lo_part} : index
    // hi rounded to nearest even in the integer bits (IREE folds extf(truncf(v)) back to v, which would make lo 0)
${round_hi}
    %hi = arith.truncf %hi32 : f32 to bf16
    %rest = arith.subf %value, %hi32 : f32
    %lo = arith.truncf %rest : f32 to bf16
    %is_lo = arith.cmpi eq, %j, %lo_part : index
    %part = arith.select %is_lo, %lo, %hi : bf16
    linalg.yield %part : bf16
  } -> ${parts_type}
${stack}

// fragment split_parts: ${v} split into three bfloat16 parts, hi = bf16(v), mid = bf16(v - hi) and lo =
// bf16(v - hi - mid) (v = hi + mid + lo within about 2^-26 |v|), stacked along an axis j in channels-last order: part
// j is the part (0 hi, 1 mid, 2 lo) that bits 2j and 2j + 1 of ${codes} name. Where PyTorch allows no reduced
// precision, float32 computed as bfloat16 x 6 takes these parts (ops/problem.py's SPLIT_PRODUCTS: float32 products)
  %${v}_parts_empty = tensor.empty() : ${parts_type}
  %${v}_parts = linalg.generic {indexing_maps = [${read_map}, ${write_map}], iterator_types = ${iterators}}
      ins(%${v} : ${in_type}) outs(%${v}_parts_empty : ${parts_type})${attrs} {
  ^bb0(%value: f32, %unused: bf16):
${round_hi}
    %rest = arith.subf %value, %hi32 : f32
${round_mid}
    %tail = arith.subf %rest, %mid32 : f32
    %hi = arith.truncf %hi32 : f32 to bf16
    %mid = arith.truncf %mid32 : f32 to bf16
    %lo = arith.truncf %tail : f32 to bf16
    %j = linalg.index ${part_dim} : index
    %j_bits = arith.index_cast %j : index to i32
    %code_two = arith.constant 2 : i32
    %code_three = arith.constant 3 : i32
    %codes = arith.constant ${codes} : i32
    %offset = arith.muli %j_bits, %code_two : i32
    %codes_at = arith.shrui %codes, %offset : i32
    %code = arith.andi %codes_at, %code_three : i32
    %code_zero = arith.constant 0 : i32
    %code_one = arith.constant 1 : i32
    %is_hi = arith.cmpi eq, %code, %code_zero : i32
    %is_mid = arith.cmpi eq, %code, %code_one : i32
    %below = arith.select %is_mid, %mid, %lo : bf16
    %part = arith.select %is_hi, %hi, %below : bf16
    linalg.yield %part : bf16
  } -> ${parts_type}
${stack}

// fragment round: %${p}32, %${value} rounded to bfloat16's nearest (ties to even) in the integer bits, as float32
    %${p}_bits = arith.bitcast %${value} : f32 to i32
    %${p}_sixteen = arith.constant 16 : i32
    %${p}_one = arith.constant 1 : i32
    %${p}_half = arith.constant 32767 : i32
    %${p}_upper = arith.constant -65536 : i32
    %${p}_shifted = arith.shrui %${p}_bits, %${p}_sixteen : i32
    %${p}_odd = arith.andi %${p}_shifted, %${p}_one : i32
    %${p}_bias = arith.addi %${p}_half, %${p}_odd : i32
    %${p}_rounded = arith.addi %${p}_bits, %${p}_bias : i32
    %${p}_kept = arith.andi %${p}_rounded, %${p}_upper : i32
    %${p}32 = arith.bitcast %${p}_kept : i32 to f32

// fragment stack_padded: the parts written into a zero-filled tensor of the padded shape, stacked after (IREE
// stores the split there in place; a tensor.pad of the stacked parts would be a copy dispatch of its own, IREE's
// slow_memcpy, since the split's spatial dims are merged before it)
  %${v}_zero_${element} = arith.constant 0.0 : ${element}
  %${v}_padded_empty = tensor.empty() : ${padded_type}
  %${v}_padded_zero = linalg.fill ins(%${v}_zero_${element} : ${element}) outs(%${v}_padded_empty : ${padded_type}) -> ${padded_type}
  ${padded} = tensor.insert_slice %${v}_parts into %${v}_padded_zero[${offsets}] [${sizes}] [${strides}] : ${parts_type} into ${padded_type}

// fragment pad_stacked: the stacked parts zero-padded after the split (IREE makes the pad a copy dispatch)
  %${v}_zero_${element} = arith.constant 0.0 : ${element}
  %${v}3_padded = tensor.pad %${v}3 low[${low}] high[${high}] {
  ^bb0(${index_args}):
    tensor.yield %${v}_zero_${element} : ${element}
  } : ${source_type} to ${result_type}

// fragment about_split: the module's comment, bf16x3 and bf16x6
// A float32 weight gradient computed as bfloat16 x 3 (split precision; offered only where PyTorch allows its
// float32 convolutions reduced precision, torch.backends.cudnn.allow_tf32, by the rule in ops/policy.py).
//
// Each float32 value v splits into two bfloat16 parts, hi = bf16(v) and lo = bf16(v - hi), so that v = hi + lo to
// within about 2^-17 |v|. A product x*g is then
//     x*g ~ hi_x*hi_g + hi_x*lo_g + lo_x*hi_g          (lo_x*lo_g, about 2^-18 |x*g|, is dropped)
// each term within about 2^-16 of its magnitude, under TF32's 2^-11. The three products are one bfloat16 weight
// gradient over three times the batch, summed in float32 (j the new leading axis of the batch):
//     grad_w[k, f, c] = sum_{j, n, o} X3[j, n, s*o + d*f, c] * G3[j, n, o, k]
//     X3 = [hi_x, hi_x, lo_x],   G3 = [hi_g, lo_g, hi_g]
// That is the module's private function @${inner}, the bfloat16 problem ${inner} (float32 result; channels-last,
// or the problem's own channels-first layout for a one-tap GEMM of whole 32-blocks of positions an image, as its
// name says), below as its own template renders it. Here: the split, the stacking and any move to channels-last
// are one elementwise pass per operand, and grad_w comes back from the inner problem's weight order to the
// problem's. From channels-first into channels-last parts, x's parts are written zero-padded (the stack_padded
// fragment: where the split's tile lets IREE write in place), and the inner problem is the same gradient of that
// padded x with no padding.
//

// fragment about_scaled: the module's comment, f16x1
// A float32 weight gradient computed as float16 products of scaled operands (f16x1; offered only where PyTorch
// allows its float32 convolutions reduced precision, torch.backends.cudnn.allow_tf32, by the rule in
// ops/precision.py).
//
// Each operand v is scaled by the power of two s_v that puts its largest magnitude in [2^14, 2^15), under float16's
// largest finite value, and rounded to float16: p = f16(s_v * v). Where s_v * |v| >= 2^-14, p keeps v's 11
// significant bits (TF32's); below, float16's subnormals keep an error under 2^-39 of v's largest magnitude. Then
//     grad_w[k, f, c] = (1 / (s_x s_g)) sum_{n, o} P_x[n, s*o + d*f, c] * P_g[n, o, k]
// each product within about 2^-10 of its magnitude (TF32's), summed in float32: the module's private function
// @${inner}, the float16 problem ${inner} (float32 result; channels-last, or the problem's own channels-first
// layout for a one-tap GEMM of whole 32-blocks of positions an image, as its name says), below as its own template
// renders it. Here: each operand's largest magnitude (two reductions), the scaled rounding and any move to
// channels-last (one elementwise pass an operand), and grad_w's store in the problem's weight order, times 1 /
// (s_x s_g). An operand's NaNs and infinities are left out of its largest magnitude: scaled, each stays itself.
//

// fragment store: grad_w from the channels-last order (K, *F, C) to the problem's
  // grad_w from the channels-last order (K, *F, C) to the problem's
  %grad_w = linalg.generic {indexing_maps = [${store_read_map}, ${store_write_map}], iterator_types = ${store_iterators}}
      ins(%inner : ${inner_grad_w_type}) outs(%dst : ${grad_w_type}) {
  ^bb0(%value: f32, %unused: f32):
    linalg.yield %value : f32
  } -> ${grad_w_type}

// fragment store_scaled: grad_w from the channels-last order (K, *F, C) to the problem's, each sum times 1 / (s_x s_g)
  %grad_w = linalg.generic {indexing_maps = [${store_read_map}, ${scalar_map}, ${scalar_map}, ${store_write_map}], iterator_types = ${store_iterators}}
      ins(%inner, %x_largest, %grad_out_largest : ${inner_grad_w_type}, tensor<f32>, tensor<f32>) outs(%dst : ${grad_w_type}) {
  ^bb0(%value: f32, %x_most: f32, %grad_out_most: f32, %unused: f32):
${unscale}
    linalg.yield %unscaled : f32
  } -> ${grad_w_type}

// fragment unscale: %unscaled, the value ${value} names times 1 / (s_a s_b) for the operands' scales s (their largest magnitudes %${a}_most and %${b}_most): 2^(381 - a_biased - b_biased - 127), within float32's normal exponents
${a_exponent}
${b_exponent}
    %both = arith.addi %${a}_biased, %${b}_biased : i32
    %c381 = arith.constant 381 : i32
    %unclamped = arith.subi %c381, %both : i32
    %c1 = arith.constant 1 : i32
    %c254 = arith.constant 254 : i32
    %above = arith.maxsi %unclamped, %c1 : i32
    %biased = arith.minsi %above, %c254 : i32
    %c23 = arith.constant 23 : i32
    %inverse_bits = arith.shli %biased, %c23 : i32
    %inverse = arith.bitcast %inverse_bits : i32 to f32
    %unscaled = arith.mulf ${value}, %inverse : f32

// fragment largest: %${v}_largest, the largest finite magnitude of %${v} (a rank-0 tensor; a NaN or infinity scales to itself and stays one in grad_w, as in float32's), over its (rows, columns) view: each row's, then the rows'
${view}
  %${v}_no_magnitude = arith.constant 0.0 : f32
  %${v}_infinity = arith.constant 0x7F800000 : f32
  %${v}_row_largest_empty = tensor.empty() : ${rows_type}
  %${v}_row_largest_zero = linalg.fill ins(%${v}_no_magnitude : f32) outs(%${v}_row_largest_empty : ${rows_type}) -> ${rows_type}
  %${v}_row_largest = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%${v}_view : ${view_type}) outs(%${v}_row_largest_zero : ${rows_type}) {
  ^bb0(%value: f32, %acc: f32):
    %magnitude = math.absf %value : f32
    %finite = arith.cmpf olt, %magnitude, %${v}_infinity : f32
    %counted = arith.select %finite, %magnitude, %${v}_no_magnitude : f32
    %larger = arith.maximumf %acc, %counted : f32
    linalg.yield %larger : f32
  } -> ${rows_type}
  %${v}_largest_empty = tensor.empty() : tensor<f32>
  %${v}_largest_zero = linalg.fill ins(%${v}_no_magnitude : f32) outs(%${v}_largest_empty : tensor<f32>) -> tensor<f32>
  %${v}_largest = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%${v}_row_largest : ${rows_type}) outs(%${v}_largest_zero : tensor<f32>) {
  ^bb0(%value: f32, %acc: f32):
    %larger = arith.maximumf %acc, %value : f32
    linalg.yield %larger : f32
  } -> tensor<f32>

// fragment exponent: %${p}_biased, the biased float32 exponent of s = 2^(14 - e) for %${most} in [2^e, 2^(e+1)), from its exponent bits (s * %${most} in [2^14, 2^15)), clamped to the normal ones: 2^126 where %${most} is zero or subnormal
    %${p}_bits = arith.bitcast %${most} : f32 to i32
    %${p}_c23 = arith.constant 23 : i32
    %${p}_exponent = arith.shrui %${p}_bits, %${p}_c23 : i32
    %${p}_c268 = arith.constant 268 : i32
    %${p}_unclamped = arith.subi %${p}_c268, %${p}_exponent : i32
    %${p}_c1 = arith.constant 1 : i32
    %${p}_c253 = arith.constant 253 : i32
    %${p}_above = arith.maxsi %${p}_unclamped, %${p}_c1 : i32
    %${p}_biased = arith.minsi %${p}_above, %${p}_c253 : i32

// fragment kept: ${result}, the split pass in a dispatch region of its own (IREE moves no reshape through it, and it keeps its tile)
  ${result} = flow.dispatch.region -> (${result_type}) {
${split_pass}
    flow.return ${inner} : ${result_type}
  }

// fragment split_scaled: ${v} scaled by s (its largest magnitude in [2^14, 2^15)) and rounded to float16, in the parts' order (one part, f16x1)
  %${v}_parts_empty = tensor.empty() : ${parts_type}
  ${result} = linalg.generic {indexing_maps = [${read_map}, ${scalar_map}, ${write_map}], iterator_types = ${iterators}}
      ins(%${v}, ${largest} : ${in_type}, tensor<f32>) outs(%${v}_parts_empty : ${parts_type})${attrs} {
  ^bb0(%value: f32, %most: f32, %unused: f16):
${exponent}
    %scale_bits = arith.shli %s_biased, %s_c23 : i32
    %scale = arith.bitcast %scale_bits : i32 to f32
    %scaled = arith.mulf %value, %scale : f32
    %part = arith.truncf %scaled : f32 to f16
    linalg.yield %part : f16
  } -> ${parts_type}
${stack}
