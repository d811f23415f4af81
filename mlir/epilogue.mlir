// The operations of a fused epilogue grad_in = f(acc, d0, d1, ...) (ops/epilogue.py): its expression tree, in
// float32, one fragment per node; comparisons give i1, turned into 1.0/0.0 where a number is needed.

// fragment constant: a number
${result} = arith.constant ${value} : f32

// fragment add
${result} = arith.addf ${a}, ${b} : f32

// fragment subtract
${result} = arith.subf ${a}, ${b} : f32

// fragment multiply
${result} = arith.mulf ${a}, ${b} : f32

// fragment divide
${result} = arith.divf ${a}, ${b} : f32

// fragment negate
${result} = arith.negf ${a} : f32

// fragment minimum: NaN-propagating, as torch.minimum
${result} = arith.minimumf ${a}, ${b} : f32

// fragment maximum: NaN-propagating, as torch.maximum
${result} = arith.maximumf ${a}, ${b} : f32

// fragment abs
${result} = math.absf ${a} : f32

// fragment compare: ${predicate} is an ordered (or, for !=, unordered) arith.cmpf predicate
${result} = arith.cmpf ${predicate}, ${a}, ${b} : f32

// fragment select: where(condition, a, b)
${result} = arith.select ${condition}, ${a}, ${b} : f32

// fragment parameter: a named parameter, from the module's f32 parameter vector
${index} = arith.constant ${position} : index
${result} = tensor.extract %params[${index}] : !params
