"""Copy dispatches in every shipped GPU module (issue 14): every problem of both manifests (ck_examples, zoo), for
rocm:gfx942 and cuda:sm_80, with the tuning tables' form and flags, through IREE's dispatch formation
(``--compile-to=flow``), which names the dispatches.

A copy dispatch is one IREE names ``slow_memcpy``: a strided insert of a stride phase into grad_in, or the copy of
a zero-padded window (the gathers that flip the weight are named after their element type and count as work). The
goal is none; ``data_movement_copies.json`` holds how many each module has now, each a miss measured and explained
in docs/PERFORMANCE.md ("Data movement"). The test fails when a module gains a copy, and when one loses one (then
the file is out of date: record it again with ``python3 tests/test_lowering_data_movement.py --record``).

No AMD GPU is reachable here: for ROCm, the dumped dispatches are the evidence.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import iree.compiler as ireec
import iree.runtime as ireert
import numpy as np

from ops import catalog, compiler, render, targets, policy
from ops.operators import conv_bwd_data, grouped_conv_bwd_weight

TARGETS = ["rocm:gfx942", "cuda:sm_80"]
SUITES = ["ck_examples", "zoo"]
EXPECTED_PATH = Path(__file__).with_name("data_movement_copies.json")
MODULES = [(suite, op, name, problem, target) for suite in SUITES for op, name, problem in catalog.problems(suite)
           for target in TARGETS]


def key(suite: str, op: str, name: str, target: str) -> str:
    return f"{suite}/{op}/{name}/{target}"


def dispatch_names(spec: compiler.ModuleSpec, workdir: Path) -> list[str]:
    """The dispatches IREE forms for ``spec`` (``--compile-to=flow``: dispatch formation names them)."""
    workdir.mkdir(parents=True, exist_ok=True)
    source, flow = workdir / f"{spec.name}.mlir", workdir / f"{spec.name}.flow.mlir"
    source.write_text(spec.mlir)
    subprocess.run([compiler.compiler_tool(), str(source), *spec.flags, "--compile-to=flow", "-o", str(flow)],
                   check=True, capture_output=True)
    return re.findall(r"flow\.executable\.export public @\S+?_dispatch_(\w+)", flow.read_text())


def copies(problem, target: str, workdir: Path) -> list[str]:
    """The copy dispatches of the module the runtime and the ahead-of-time build prefer (the later alternatives,
    tried when code generation fails, differ in how a dispatch is generated, not in which dispatches exist)."""
    spec = policy.module_specs(problem, targets.parse_target(target))[0]
    return sorted(name for name in dispatch_names(spec, workdir) if "slow_memcpy" in name)


def test_the_record_covers_every_module():
    expected = json.loads(EXPECTED_PATH.read_text())["copies"]
    assert sorted(expected) == sorted(key(s, o, n, t) for s, o, n, _, t in MODULES)


def _count_all() -> dict[str, int]:
    """Copy dispatches per module, the modules compiled in parallel (each compile is its own process)."""
    def count(module):
        suite, op, name, problem, target = module
        with tempfile.TemporaryDirectory() as workdir:
            found = copies(problem, target, Path(workdir))
        if op in ("maxpool2d_bwd", "avgpool3d_bwd"):
            assert not found, found  # the pooling operators are one gather dispatch each
        return key(suite, op, name, target), len(found)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(pool.map(count, MODULES))


def test_copy_dispatches():
    expected = json.loads(EXPECTED_PATH.read_text())["copies"]
    found = _count_all()
    changed = {k: f"{expected[k]} recorded, {found[k]} now" for k in found if found[k] != expected[k]}
    assert not changed, (
        f"copy dispatches changed in {len(changed)} module(s): {changed}; if they improved, record again "
        "(python3 tests/test_lowering_data_movement.py --record) and update docs/PERFORMANCE.md"
    )


def _record() -> None:
    counts = _count_all()
    EXPECTED_PATH.write_text(json.dumps({
        "what": "copy (slow_memcpy) dispatches per shipped module; recorded by python3 tests/test_lowering_data_movement.py --record",
        "total": sum(counts.values()), "copies": counts,
    }, indent=1) + "\n")


def test_cuda_reads_bfloat16_channels_last_padding_inside_the_convolution(tmp_path):
    """``mlir/tuning/cuda-sm_80.json``'s pad-fusion rules for bfloat16 channels-last layers (H200,
    docs/perf/h200-pad-fusion): backward-data at stride 1 and 2 (2-D and 3-D) and 2-D stride-1 weight gradients of
    64+ channels compile with IREE's pad fusion, so their zero padding is no copy dispatch of its own; without the
    flag the same modules have one. 3-D weight gradients (slower with it) and float32 keep the copy."""
    cuda = targets.parse_target("cuda:sm_80")
    layer = dict(batch=2, groups=1, in_channels=64, out_channels=64, input_spatial=(8, 28, 28),
                 filter_spatial=(3, 3, 3), padding=1, layout="NDHWC", dtype="bfloat16")
    flat = dict(layer, input_spatial=(28, 28), filter_spatial=(3, 3), layout="NHWC")
    fused = [(conv_bwd_data, layer), (conv_bwd_data, dict(layer, stride=2, out_channels=128)),
             (conv_bwd_data, flat), (grouped_conv_bwd_weight, flat)]
    kept = [(grouped_conv_bwd_weight, layer), (conv_bwd_data, dict(flat, dtype="float32"))]
    for number, (op, params) in enumerate(fused + kept):
        problem = op.problem_from_params(**params)
        spec = policy.module_specs(problem, cuda)[0]
        assert (policy.FUSE_PADDING in spec.extra_flags) == (number < len(fused)), params
        without = dataclasses.replace(spec, extra_flags=tuple(f for f in spec.extra_flags if f != policy.FUSE_PADDING))
        copied = [sum("slow_memcpy" in name for name in dispatch_names(s, tmp_path / f"{number}_{i}"))
                  for i, s in enumerate((spec, without))]
        expected = [0, copied[1]] if number < len(fused) else [copied[1]] * 2
        assert copied == expected and copied[1] > 0, (params, copied)


def test_cuda_writes_float32_weight_gradient_padding_by_a_gather(tmp_path):
    """``mlir/tuning/cuda-sm_80.json``'s ``zero_pad`` rule (H200, docs/perf/h200-pad-fusion/exp40.log): a float32
    weight gradient of 64+ channels (computed in float32, or as bf16x3 parts) writes x's zero padding by a gathering
    generic, so no copy dispatch is left; a bfloat16 one (grad_w bfloat16) keeps the pad IREE copies."""
    layer = dict(batch=2, groups=1, in_channels=64, out_channels=64, input_spatial=(8, 28, 28),
                 filter_spatial=(3, 3, 3), padding=1, layout="NCDHW", dtype="float32")
    split = dataclasses.replace(_weight_problem(dict(layer, layout="NDHWC")), precision="bf16x3")
    _check_pad_writing([_weight_problem(layer), split],
                       [_weight_problem(dict(layer, layout="NDHWC", dtype="bfloat16"))], tmp_path)


def test_cuda_writes_grouped_split_padding_by_a_gather_and_keeps_the_others(tmp_path):
    """The ``zero_pad`` rule for grouped bfloat16 parts (H200, docs/perf/h200-weight-tiles-2d/exp50_gather_pads.log):
    a grouped float32 weight gradient computed as bf16x3 writes its parts' zero padding by a gathering generic
    (ResNeXt-50's four such modules 1.04-1.29x faster, its step 39.69 -> 39.17 ms); grouped ones computed in float32
    (fewer than 16 channels a group) and depthwise ones the columns form does not take (bfloat16 channels-first) keep
    IREE's copy of the tensor.pad (the gather ran 0.59-1.37x there; float32 NCHW and NHWC depthwise ones read x where
    it lies, tests/test_weight_columns.py)."""
    layer = dict(batch=2, groups=4, in_channels=16, out_channels=16, input_spatial=(14, 14), filter_spatial=(3, 3),
                 padding=1, layout="NCHW", dtype="float32")
    split = dataclasses.replace(_weight_problem(layer), precision="bf16x3")
    depthwise = dict(layer, groups=16, in_channels=1, out_channels=1, dtype="bfloat16")
    _check_pad_writing([split], [_weight_problem(dict(layer, in_channels=8, out_channels=8)),
                                 _weight_problem(depthwise)], tmp_path)


def _check_pad_writing(gathered: list, copied: list, tmp_path) -> None:
    """On CUDA, each problem of ``gathered`` writes x's zero padding by a gather (no tensor.pad, no copy dispatch),
    each of ``copied`` keeps the tensor.pad that IREE copies (a slow_memcpy dispatch)."""
    cuda = targets.parse_target("cuda:sm_80")
    for number, problem in enumerate([*gathered, *copied]):
        spec = policy.module_specs(problem, cuda)[0]
        copies = [name for name in dispatch_names(spec, tmp_path / str(number)) if "slow_memcpy" in name]
        kept = number >= len(gathered)
        assert ("tensor.pad" in spec.mlir, bool(copies)) == (kept, kept), (problem.name, copies)


def _weight_problem(params: dict):
    """grouped_conv_bwd_weight's problem of ``params``."""
    return grouped_conv_bwd_weight.problem_from_params(**params)


def test_a_gathered_zero_pad_is_numpys_pad():
    """``render.zero_pad``'s gather form computes what ``numpy.pad`` does (zeros around, the source inside), run on
    the CPU: padding at both ends, one end, and none of some dims."""
    rng = np.random.default_rng(0)
    source = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    low, high = [0, 1, 2, 0], [0, 2, 0, 1]
    padded = [s + lo + hi for s, lo, hi in zip(source.shape, low, high)]
    text = render.zero_pad("%padded", "%x", low, high, "f32", render.tensor(source.shape, "f32"),
                           render.tensor(padded, "f32"), gather_shape=list(source.shape))
    module = (f"func.func @pad(%x: {render.tensor(source.shape, 'f32')}) -> {render.tensor(padded, 'f32')} {{\n"
              f"  %zero_element = arith.constant 0.0 : f32\n{render.indent(text)}\n"
              f"  return %padded : {render.tensor(padded, 'f32')}\n}}\n")
    vmfb = ireec.compile_str(module, target_backends=["llvm-cpu"], extra_args=["--iree-llvmcpu-target-cpu=generic"])
    result = np.asarray(ireert.load_vm_flatbuffer(vmfb, driver="local-task").pad(source))
    np.testing.assert_array_equal(result, np.pad(source, list(zip(low, high))))


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python3 tests/test_lowering_data_movement.py --record")
    _record()
