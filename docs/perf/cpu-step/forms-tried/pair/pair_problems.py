"""The problems (and current modules) of the layer of a converted model whose backward-data problem's name holds a
substring: writes pair_data.mlir/.pkl and pair_weight.mlir/.pkl here.

    PYTHONPATH=. python docs/perf/cpu-step/forms-tried/pair/pair_problems.py resnext2d g1_c64_k64_i16x16_f1x1_s1x1_d1x1_p0_0x0_0_e1 pair
"""
import os
import pickle
import sys

import torch

import ops.torch as otorch
from build_tools import layer_bench
from ops import policy, targets

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(2)
model, x = layer_bench.model_and_input(sys.argv[1], 0)
otorch.precompile(model, x)
target = targets.target_for_device("local-task")
for layer in layer_bench.layers(layer_bench.kernel_calls(model, x)):
    ps = layer.problems
    if len(ps) == 2 and sys.argv[2] in ps[0].name:
        for p, tag in zip(ps, ("data", "weight")):
            spec = policy.module_specs(p, target)[0]
            open(f"{HERE}/{sys.argv[3]}_{tag}.mlir", "w").write(spec.mlir)
            pickle.dump(p, open(f"{HERE}/{sys.argv[3]}_{tag}.pkl", "wb"))
            print(p.name)
        break
