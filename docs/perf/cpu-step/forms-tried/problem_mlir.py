"""The problem of a layer of a converted model whose name holds a substring, and its current module: writes
/tmp/exp/NAME.mlir and /tmp/exp/NAME.pkl. PYTHONPATH=. python problem_mlir.py resnext2d g8_c4_k4 g8c4"""
import os
import pickle
import sys

import torch

import ops.torch as otorch
from build_tools import layer_bench
from ops import policy, targets

torch.set_num_threads(2)
os.makedirs("/tmp/exp", exist_ok=True)
model, x = layer_bench.model_and_input(sys.argv[1], 0)
otorch.precompile(model, x)
target = targets.target_for_device("local-task")
for layer in layer_bench.layers(layer_bench.kernel_calls(model, x)):
    for p in layer.problems:
        if sys.argv[2] in p.name:
            specs = policy.module_specs(p, target)
            print(p.name, getattr(p, "epilogue", None), [s.name for s in specs][:3])
            open(f"/tmp/exp/{sys.argv[3]}.mlir", "w").write(specs[0].mlir)
            pickle.dump(p, open(f"/tmp/exp/{sys.argv[3]}.pkl", "wb"))
            print(specs[0].flags)
            sys.exit()
