// Mutations: wrong modules made from a right one (build_tools/mutations.py). The operator's own function is kept whole
// but made private (@${inner}); each public function has its signature (the inputs, then the destinations, each
// result written into its destination: iree.abi.output) and calls it, rewriting one input before the call or
// one result after it, position by position:
//     mutated[i] = where(i) ? replacement : value(original[source(i)])
// where source(i) is i but along one axis (a row or batch index read from another, the grid shifted by one),
// value flips the sign or keeps it, and where(i) tests a few axes against fixed positions (a channel, the last
// filter tap, one position).

// fragment wrapper: a public function of the module's signature around @${inner}
func.func @${name}(${arguments}) -> ${result_types} {
${before}
  ${results} = call @${inner}(${call_arguments}) : (${argument_types}) -> ${result_types}
${after}
  return ${returned} : ${returned_types}
}

// fragment rewrite: ${result} = ${source} rewritten: read at each position's source index, replaced where chosen
  ${result}_empty = tensor.empty() : ${type}
  ${result} = linalg.generic {indexing_maps = [${map}], iterator_types = ${iterators}} outs(${result}_empty : ${type}) {
  ^bb0(%unused: ${element}):
${indices}
    %read = tensor.extract ${source}[${read}] : ${type}
${value}
    linalg.yield ${yielded} : ${element}
  } -> ${type}

// fragment index: the position along axis ${axis}
    %i${axis} = linalg.index ${axis} : index

// fragment swap: along axis ${axis}, position ${from} read from position ${to} (the others from themselves)
    %from${axis} = arith.constant ${from} : index
    %to${axis} = arith.constant ${to} : index
    %is${axis} = arith.cmpi eq, %i${axis}, %from${axis} : index
    %s${axis} = arith.select %is${axis}, %to${axis}, %i${axis} : index

// fragment shift: along axis ${axis}, every position read from the next one (the last from itself)
    %s${axis} = affine.min affine_map<(i) -> (i + 1, ${last})>(%i${axis})

// fragment at: whether the position along axis ${axis} is ${position}
    %c${axis} = arith.constant ${position} : index
    %at${axis} = arith.cmpi eq, %i${axis}, %c${axis} : index

// fragment and: the conjunction of two conditions
    ${result} = arith.andi ${a}, ${b} : i1

// fragment negate: the value read, its sign flipped
    %value = arith.negf %read : ${element}

// fragment replace: the value read, replaced by ${constant} where ${where} holds
    %replacement = arith.constant ${constant} : ${element}
    %value = arith.select ${where}, %replacement, %read : ${element}
