"""Named problems: the CK examples' default problems, runnable by name from the command line.

Each operator module used here provides ``problem_from_params(**params)``, ``random_inputs(problem, rng)``,
``reference(problem, inputs)`` (float64) and ``call(problem, inputs, device=None, out=None)``.
"""

from __future__ import annotations

from .operators import conv_bwd_data

OPERATORS = {"conv_bwd_data": conv_bwd_data}

# CK example defaults (the arguments CK's examples run with when given none).
CK_EXAMPLES = {
    "conv_bwd_data": {
        # 17_convnd_bwd_data: 2D, N=128, K=256, C=256, 71x71 input, 3x3 filter, stride 2, pad 1, fp16
        "ck_default": dict(batch=128, in_channels=256, out_channels=256, input_spatial=(71, 71),
                           filter_spatial=(3, 3), stride=2, padding=1, dilation=1, layout="NHWC", dtype="float16"),
        # the stride-1 problem of the performance notes (N=128, 36x36, K=256 -> C=128, 3x3)
        "stride1_36": dict(batch=128, in_channels=128, out_channels=256, input_spatial=(36, 36),
                           filter_spatial=(3, 3), stride=1, padding=1, dilation=1, layout="NHWC", dtype="float16"),
    },
}


def problem_names(op: str) -> list[str]:
    return list(CK_EXAMPLES.get(op, {}))


def params(op: str, name: str, **overrides) -> dict:
    if op not in OPERATORS:
        raise ValueError(f"unknown operator {op!r}; known: {', '.join(OPERATORS)}")
    problems = CK_EXAMPLES[op]
    if name not in problems:
        raise ValueError(f"unknown problem {name!r} for {op}; known: {', '.join(problems)}")
    return {**problems[name], **overrides}


def problem(op: str, name: str, **overrides):
    return OPERATORS[op].problem_from_params(**params(op, name, **overrides))
