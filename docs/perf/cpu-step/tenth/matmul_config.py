"""Per_image_nn weight gradients with a compilation_info pinned on their per-image batch_matmul (its distribution and
vector tiles; IREE's default vector tile for these row counts is 3 x 16) against IREE's default, each checked against
the float64 reference, then timed interleaved through the CPU launcher (gather_flag.py's way): medians of ROUNDS
(default 9) rounds of 9 calls, ms. CANDIDATES: per problem, (distribution (M, N), vector (M, N, K)) to try, from
matmul_sweep.txt. The tuning table's entries are left out, so that "default" is IREE's.

    PYTHONPATH=. OPS_QUIET=1 python docs/perf/cpu-step/tenth/matmul_config.py [MODEL,...]
"""
import os
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import gather_flag as g  # noqa: E402

from ops import policy, registry, verify  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", 9))
CANDIDATES = {
    "grouped_conv_bwd_weight_3d_ncdhw_float32_n4_g1_c3_k16_i8x32x32": [((27, 16), (9, 16, 16)), ((27, 16), (9, 16, 1))],
    "grouped_conv_bwd_weight_3d_ncdhw_float32_n4_g4_c4_k8_i4x16x16": [((36, 8), (12, 8, 16)), ((54, 8), (9, 8, 16))],
    "grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c32_k32_i16x16_f3x3": [((48, 32), (12, 32, 16))],
    "grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c32_k64_i16x16_f3x3": [((36, 64), (9, 32, 16))],
    # resnext2d's 1 x 1 layers (a second run: PYTHONPATH=. python ... resnext2d)
    "grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c128_k64_i8x8_f1x1": [((64, 64), (4, 16, 16)), ((64, 64), (8, 16, 16))],
    "grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c64_k128_i16x16_f1x1": [((64, 64), (4, 16, 16)), ((64, 64), (8, 16, 16))],
    "grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c64_k128_i8x8_f1x1": [((64, 64), (4, 16, 16)), ((64, 64), (8, 16, 16))],
    "grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c64_k64_i16x16_f1x1": [((64, 64), (4, 32, 16)), ((64, 64), (8, 16, 16))],
    "grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c32_k64_i16x16_f1x1": [((64, 32), (4, 32, 16)), ((64, 32), (8, 32, 16))],
    "grouped_conv_bwd_weight_2d_nchw_float32_n16_g1_c32_k32_i16x16_f1x1": [((32, 32), (8, 16, 16)), ((32, 32), (4, 16, 16))],
}


def config(distribution, vector) -> str:
    return ("#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
            f"distribution = [1, {distribution[0]}, {distribution[1]}, 0], "
            f"vector_common_parallel = [1, {vector[0]}, {vector[1]}, 0], vector_reduction = [0, 0, 0, {vector[2]}]>, "
            "translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>")


def main() -> None:
    torch.set_num_threads(2)
    policy.configs_for = lambda problem, target: {}  # "default": IREE's own, not the table's entries
    models = sys.argv[1].split(",") if len(sys.argv) > 1 else ["cnn3d", "resnext2d", "resnet"]
    for problem in g.problems(models, "grouped_conv_bwd_weight").values():
        candidates = next((c for prefix, c in CANDIDATES.items() if problem.name.startswith(prefix)), None)
        if candidates is None:
            continue
        module = registry.module(problem)
        inputs = module.random_inputs(problem, np.random.default_rng(0))
        expected = module.reference(problem, inputs)
        expected = expected if isinstance(expected, (list, tuple)) else [expected]
        form = policy.forms_for(problem, g.CPU)[0]
        assert form.contraction == "per_image_nn", (problem.name, form)
        thunks, errors = {}, {}
        for label, configs in [("default", None)] + [(f"{d}/{v}", {0: config(d, v)}) for d, v in candidates]:
            thunks[label], outs = g.launched(policy.module_spec(problem, g.CPU, configs=configs), inputs,
                                             module.results(problem))
            thunks[label]()
            errors[label] = max(verify.relative_error(o.numpy(), e) for o, e in zip(outs, expected))
        medians = g.interleaved_medians(thunks, ROUNDS)
        cells = "  ".join(f"{label} {m:.3f} (err {errors[label]:.0e})" for label, m in medians.items())
        print(f"{problem.name[:90]}  {cells}", flush=True)


if __name__ == "__main__":
    main()
