"""cnn3d's 3-D stem weight gradient (4 x 3 x 8 x 32 x 32, 3 x 3 x 3, 16 channels out) in other forms and flags, each
checked against the float64 reference and timed interleaved through the CPU launcher on PyTorch's threads (each
call after a PyTorch parallel region), medians of ROUNDS rounds of 9 calls, ms.

    PYTHONPATH=. python docs/perf/cpu-step/eleventh/stem_forms.py [LABEL,...]
"""
import sys

import numpy as np
import torch

sys.path.insert(0, "docs/perf/cpu-step/tenth")
sys.path.insert(0, "tests")
import gather_flag as g  # noqa: E402
from grouped_conv_bwd_weight_cases import TABLE_NAMED  # noqa: E402

from ops import compiler, policy, registry, verify  # noqa: E402

GATHER = g.GATHER
KEEP = "--iree-global-opt-propagate-transposes=false"
CANDIDATES = {
    "shipped": (None, ()),
    "generic": (dict(contraction="generic", batch_split=1), ()),
    "generic+gather": (dict(contraction="generic", batch_split=1), (GATHER,)),
    "generic j2+gather": (dict(contraction="generic", batch_split=2), (GATHER,)),
    "generic j4+gather": (dict(contraction="generic", batch_split=4), (GATHER,)),
    "taps+gather": (dict(contraction="taps"), (GATHER,)),
    "im2col+gather": (dict(contraction="im2col"), (GATHER,)),
}


def main() -> None:
    torch.set_num_threads(2)
    problem = TABLE_NAMED["cnn3d_stem"]
    labels = sys.argv[1].split(",") if len(sys.argv) > 1 else list(CANDIDATES)
    module = registry.module(problem)
    inputs = module.random_inputs(problem, np.random.default_rng(0))
    expected = module.reference(problem, inputs)
    thunks = {}
    for label in labels:
        options, flags = CANDIDATES[label]
        try:
            spec = policy.module_spec(problem, g.CPU, extra_flags=flags, options=options)
            thunks[label], outs = g.launched(spec, inputs, module.results(problem))
        except compiler.CompileError as error:
            print(f"{label}: does not compile: {str(error).splitlines()[-1][:160]}", flush=True)
            continue
        thunks[label]()
        print(f"{label}: error {verify.relative_error(outs[0].numpy(), expected):.1e}", flush=True)
    for label, ms in g.interleaved_medians(thunks).items():
        print(f"{label:20s} {ms:7.3f} ms")


if __name__ == "__main__":
    main()
