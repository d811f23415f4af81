// Fragments every operator's templates share: the element-type policy (ops/dtypes.py decides when each applies),
// zero padding, reshapes and index arithmetic. Each takes values only (SSA names, types, index lists); the
// operator's Python picks the fragment and computes them.

// fragment widen: a value of the element type, to the float32 accumulator
${result} = arith.extf ${value} : ${element} to f32

// fragment narrow: a float32 accumulator value, to the stored element type
${result} = arith.truncf ${value} : f32 to ${element}

// fragment zero_pad: ${source} with zeros around it (low and high counts per dim)
${result} = tensor.pad ${source} low[${low}] high[${high}] {
^bb0(${index_args}):
  tensor.yield ${zero} : ${element}
} : ${source_type} to ${result_type}

// fragment zero_pad_gather: zero_pad's result by a generic reading ${source} where it lies (clamped indices, zero outside)
${result}_empty = tensor.empty() : ${result_type}
${result} = linalg.generic {indexing_maps = [${map}], iterator_types = ${iterators}}
    outs(${result}_empty : ${result_type}) {
^bb0(%${p}unused: ${element}):
${indices}
  %${p}read = tensor.extract ${source}[${read}] : ${source_type}
  %${p}value = arith.select ${inside}, %${p}read, ${zero} : ${element}
  linalg.yield %${p}value : ${element}
} -> ${result_type}

// fragment zero_pad_index: a padded dim's index into the source (common.clamp clamps it into the source)
  %${p}p${dim} = linalg.index ${dim} : index
  %${p}s${dim} = arith.subi %${p}p${dim}, %${p}c${low} : index

// fragment zero_pad_bounds: whether a padded dim's index lies inside the source (after common.clamp's %..._last)
  %${p}above${dim} = arith.cmpi sge, %${p}s${dim}, %${p}c0 : index
  %${p}below${dim} = arith.cmpi sle, %${p}s${dim}, %${p}s${dim}_last : index

// fragment slice: a strided view of ${source}
${result} = tensor.extract_slice ${source}[${offsets}] [${sizes}] [${strides}] : ${source_type} to ${result_type}

// fragment collapse: a free reshape merging dims
${result} = tensor.collapse_shape ${source} ${reassociation} : ${source_type} into ${result_type}

// fragment expand: a free reshape splitting dims
${result} = tensor.expand_shape ${source} ${reassociation} output_shape [${shape}] : ${source_type} into ${result_type}

// fragment multiply_add: ${result} = ${acc} + ${a} * ${b}, in float32 (the body of every generic convolution)
    %product = arith.mulf ${a}, ${b} : f32
    %${result} = arith.addf ${acc}, %product : f32

// fragment im2col_gather: one chunk of an im2col form: the rows its fixed leading taps read, gathered into columns
  // the ${rows} rows this chunk's fixed leading taps read: ${identity} on those axes
  %${piece} = tensor.extract_slice ${source}[${offsets}] [${sizes}] [${strides}] : ${source_type} to ${piece_type}
  %${cols}_empty = tensor.empty() : ${cols_type}
  %${cols} = linalg.generic {indexing_maps = [${read_map}, ${cols_map}], iterator_types = ${cols_iterators}}
      ins(%${piece} : ${piece_type}) outs(%${cols}_empty : ${cols_type}) {
  ^bb0(%${value}: ${element}, %unused: ${element}):
    linalg.yield %${value} : ${element}
  } -> ${cols_type}
  %${cols}_matrix = tensor.collapse_shape %${cols} ${cols_reassociation} : ${cols_type} into ${cols_matrix_type}

// fragment and: the conjunction of two i1 values
${result} = arith.andi ${a}, ${b} : i1

// fragment clamp: ${value} clamped into [0, ${last}] (${zero}: the index 0, defined by the caller)
${value}_last = arith.constant ${last} : index
${value}_low = arith.maxsi ${value}, ${zero} : index
${value}_clamped = arith.minsi ${value}_low, ${value}_last : index

// fragment on_and_clamped: whether an index lies in [0, size) (unsigned: a negative one is huge), the index clamped
%size${axis} = arith.constant ${size} : index
%on${axis} = arith.cmpi ult, ${index}, %size${axis} : index
${clamped} = arith.select %on${axis}, ${index}, %c0 : index

// fragment transpose: ${source} with its dims permuted (a copy)
  ${result}_empty = tensor.empty() : ${result_type}
  ${result} = linalg.transpose ins(${source} : ${source_type}) outs(${result}_empty : ${result_type}) permutation = [${permutation}]

// fragment transients: on llvm-cpu every module function takes, last, the buffer its intermediate tensors live in. The
// caller (ops/runtime.py) passes one workspace, kept and reused across calls, of at least the size IREE reports in
// the function's reflection (iree.abi.transients.size.constant): without it each call's intermediates (the gathered
// taps: hundreds of MB on the CK problems) would be fresh pages, faulted in on every call.
, %transients: !hal.buffer {iree.abi.transients}

// fragment copy_config: how a GPU target tiles a data-movement linalg.generic (the tuning table's copy_config;
// ops/render.py's copy_attrs): the attrs, spliced into the generic's line, so this comment is left out
 attrs = {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{${promote}thread = [${thread}], workgroup = [${workgroup}]}>, translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [${threads}, 1, 1] subgroup_size = ${subgroup_size}>>}
