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
// Problem: ${function}

${inner_module}
func.func @${function}(%x: ${x_type}, %grad_out: ${grad_out_type}, %dst: ${grad_w_type} {iree.abi.output = 0 : index}${transients}) -> ${grad_w_type} {
${split_x}
${split_grad_out}
  %inner_empty = tensor.empty() : ${inner_grad_w_type}
  %inner = func.call @${inner}(${x3}, %grad_out3, %inner_empty) : (${x3_type}, ${grad_out3_type}, ${inner_grad_w_type}) -> ${inner_grad_w_type}
  // grad_w from the channels-last order (K, *F, C) to the problem's
  %grad_w = linalg.generic {indexing_maps = [${store_read_map}, ${store_write_map}], iterator_types = ${store_iterators}}
      ins(%inner : ${inner_grad_w_type}) outs(%dst : ${grad_w_type}) {
  ^bb0(%value: f32, %unused: f32):
    linalg.yield %value : f32
  } -> ${grad_w_type}
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

// fragment stack: the parts as one tensor, j merged with the axis after it
  %${v}3 = tensor.collapse_shape %${v}_parts [${collapse}] : ${parts_type} into ${stacked_type}

// fragment stack_padded: the parts written into a zero-filled tensor of the padded shape, then stacked (IREE
// stores the split there in place; a tensor.pad of the stacked parts would be a copy dispatch of its own, IREE's
// slow_memcpy, since the split's spatial dims are merged before it)
  %${v}_zero_bf16 = arith.constant 0.0 : bf16
  %${v}_padded_empty = tensor.empty() : ${padded_type}
  %${v}_padded_zero = linalg.fill ins(%${v}_zero_bf16 : bf16) outs(%${v}_padded_empty : ${padded_type}) -> ${padded_type}
  %${v}_padded = tensor.insert_slice %${v}_parts into %${v}_padded_zero[${offsets}] [${sizes}] [${strides}] : ${parts_type} into ${padded_type}
  %${v}3_padded = tensor.collapse_shape %${v}_padded [${collapse}] : ${padded_type} into ${stacked_type}

// fragment pad_stacked: the stacked parts zero-padded after the split (IREE makes the pad a copy dispatch)
  %${v}_zero_bf16 = arith.constant 0.0 : bf16
  %${v}3_padded = tensor.pad %${v}3 low[${low}] high[${high}] {
  ^bb0(${index_args}):
    tensor.yield %${v}_zero_bf16 : bf16
  } : ${source_type} to ${result_type}
