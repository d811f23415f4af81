"""CPU: float32 channels-first backward-data GEMMs of few rows take the im2col form with IREE's data tiling and
ukernels on an Intel host with AVX512-FP16 and no AMX (``mlir/tuning/llvm-cpu.json``,
docs/perf/xeon-data-tiling-im2col, whose module logs the figures below quote): which problems, on which hosts, and
the modules against the float64 definition."""

import numpy as np
import pytest

from ops import catalog, policy, registry, render, tables, targets, verify
from ops.api import run
from ops.operators import contractions, phase_plan
from conftest import poisoned

CPU = targets.parse_target("llvm-cpu")
DATA_TILING = ("--iree-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all")
XEON_HOST = frozenset({"avx2", "fma", "avx512f", "avx512_fp16"})  # AVX-512 with FP16, no AMX: where it was measured
ZEN4_HOST = frozenset({"avx2", "fma", "avx512f"})
AMX_HOST = frozenset({"avx2", "fma", "avx512f", "avx512_fp16", "amx_tile"})


def _problem(channels=512, out_channels=512, spatial=7, stride=1, taps=3, layout="NCHW", batch=4):
    """A dense float32 backward-data problem of ``spatial`` x ``spatial`` output (grad_out) positions, or of the
    ``spatial`` tuple's (3-D, NCDHW)."""
    spatial = spatial if isinstance(spatial, tuple) else (spatial,) * 2
    layout = "NCDHW" if len(spatial) == 3 else layout
    return catalog.problem("conv_bwd_data", "ck_default", batch=batch, in_channels=channels,
                           out_channels=out_channels, input_spatial=tuple(s * stride for s in spatial),
                           filter_spatial=(taps,) * len(spatial), stride=stride, padding=taps // 2, layout=layout,
                           dtype="float32")


def _choice(problem) -> tuple[str, bool]:
    """(the contraction of ``problem``'s first form, whether its module is data-tiled)."""
    form = policy.forms_for(problem, CPU)[0]
    flags = policy.flags_for(problem, CPU, form)
    return form.contraction, all(flag in flags for flag in DATA_TILING)


# (problem parameters, the choice on the Xeon): the measured sides of each rule's bounds
XEON_CHOICES = [
    (dict(spatial=7), ("im2col", True)),                     # 3x3 stride 1: 1.52x (11.85 -> 7.81 ms)
    (dict(channels=256, out_channels=256, spatial=14), ("im2col", True)),   # 1.09x (1.37x at batch 16)
    (dict(channels=128, out_channels=128, spatial=28), ("generic", False)),  # 0.51x as im2col with data tiling
    (dict(channels=128, out_channels=128, spatial=14), ("generic", False)),  # 128 channels: 0.59x
    (dict(spatial=7, stride=2), ("im2col", True)),           # 3x3 stride 2 to 7x7: 1.80x
    (dict(channels=256, out_channels=256, spatial=14, stride=2), ("im2col", False)),  # to 14x14: 0.87x
    (dict(channels=256, out_channels=256, spatial=7, stride=2), ("im2col", False)),   # 256 channels: 0.99x
    (dict(channels=1024, out_channels=2048, spatial=7, stride=2, taps=1), ("im2col", True)),  # 1x1 stride 2: 2.54x
    (dict(channels=512, out_channels=1024, spatial=14, stride=2, taps=1), ("im2col", True)),  # 1.68x
    (dict(channels=256, out_channels=512, spatial=28, stride=2, taps=1), ("im2col", False)),  # 0.80x
    (dict(channels=104, out_channels=208, spatial=14, stride=2, taps=1), ("im2col", False)),  # RegNet's: 0.91x
    (dict(out_channels=2048, taps=1), ("im2col", True)),     # 1x1 stride 1, a 1M-element weight: 1.31x
    (dict(channels=2048, taps=1), ("im2col", True)),         # 1.29x
    (dict(taps=1), ("generic", False)),                      # a 256K-element weight: 0.61x
    (dict(channels=960, out_channels=160, taps=1), ("generic", False)),  # MobileNetV2's: 0.49x
    (dict(channels=1024, out_channels=256, spatial=14, taps=1), ("generic", False)),  # 196 positions: 0.72x
    (dict(spatial=1, taps=1, out_channels=2048), ("generic", False)),  # one position: unmeasured
    (dict(spatial=7, layout="NHWC"), ("generic", False)),    # channels-last: unmeasured
    # 3-D (r3d_18's, NCDHW, taps copied plane by plane): 3x3x3 at stride 1 to 784 positions, at stride 2 to 98
    (dict(spatial=(2, 7, 7)), ("im2col", True)),             # 2.9x (100.3 -> 34.4 ms)
    (dict(channels=256, out_channels=256, spatial=(4, 14, 14)), ("im2col", True)),   # 1.57x
    (dict(channels=128, out_channels=128, spatial=(8, 28, 28)), ("im2col", False)),  # 0.71x
    (dict(channels=256, spatial=(2, 7, 7), stride=2), ("im2col", True)),            # 1.44x
    (dict(channels=128, out_channels=256, spatial=(4, 14, 14), stride=2), ("im2col", False)),  # 0.81x
]


@pytest.mark.parametrize("params, choice", XEON_CHOICES)
def test_few_row_backward_data_takes_data_tiled_im2col_on_the_xeon_host_only(monkeypatch, params, choice):
    problem = _problem(**params)
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: XEON_HOST)
    assert _choice(problem) == choice, problem.name
    for host in (ZEN4_HOST, AMX_HOST):  # unmeasured there: no data tiling
        monkeypatch.setattr(targets, "host_cpu_flags", lambda: host)
        assert not _choice(problem)[1], (problem.name, sorted(host))


@pytest.mark.parametrize("params", [
    dict(batch=4),                                                           # ResNet-50's 3x3 at 7x7, batch 4
    dict(batch=2, spatial=4, stride=2),                                      # several taps at stride 2
    dict(batch=2, channels=512, out_channels=1024, spatial=4, stride=2, taps=1),  # one tap at stride 2
    dict(batch=2, channels=512, out_channels=1024, spatial=4, taps=1),       # one tap at stride 1
    dict(batch=1, channels=256, out_channels=256, spatial=(2, 4, 4)),        # 3-D, several taps at stride 1
    dict(batch=1, channels=256, out_channels=256, spatial=(2, 4, 4), stride=2),  # 3-D, at stride 2
])
def test_the_data_tiled_im2col_module_matches_the_definition(monkeypatch, rng, params):
    """Each rule's module, compiled for this machine's CPU with the Xeon's rules (data tiling and ukernels), into a
    poisoned destination, against float64."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: XEON_HOST)
    problem = _problem(**params)
    spec = policy.module_spec(problem, CPU)
    assert all(flag in spec.flags for flag in DATA_TILING) and "linalg.batch_matmul" in spec.mlir, problem.name
    module = registry.module(problem)
    inputs = module.random_inputs(problem, rng)
    got = run(problem, inputs, out=poisoned(problem.input_shape, problem.dtype)).to_host()
    error = verify.relative_error(got, module.reference(problem, inputs))
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("host, tiled", [(XEON_HOST, True), (ZEN4_HOST, False), (AMX_HOST, False)])
def test_narrow_3d_im2col_backward_data_takes_a_32_column_matmul_tile_on_the_xeon_host(monkeypatch, host, tiled):
    """r3d_18's 64- and 128-channel 3x3x3 layers (not data-tiled): their im2col batch_matmuls take 14 rows by 32
    columns where it was measured (435.6 -> 343.3 ms and 126.1 -> 102.6, docs/perf/xeon-data-tiling-im2col/
    im2col_rule.log); other hosts, and 256 channels (data-tiled), keep IREE's tile."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: host)
    for channels, spatial in ((64, (16, 56, 56)), (128, (8, 28, 28))):
        problem = _problem(channels=channels, out_channels=channels, spatial=spatial)
        assert _choice(problem) == ("im2col", False)
        tile = "vector_common_parallel = [1, 14, 32, 0], vector_reduction = [0, 0, 0, 8]"
        assert (tile in policy.module_spec(problem, CPU).mlir) == tiled, problem.name
    assert "vector_common_parallel" not in policy.module_spec(_problem(256, 256, (4, 14, 14)), CPU).mlir


def test_the_3d_im2col_matmul_tile_divides_its_gemm():
    """(B, M, N, K) of the im2col batch_matmuls (``contractions.im2col_gemm``): rows of the first of 14, 16, 8 that
    divides M, 32 columns, a reduction step dividing K; several phases (a stride) or N not a multiple of 32: none."""
    spec = next(r for r in tables.rules("llvm-cpu") if "matmul_tiles" in r and r["operator"] == "conv_bwd_data")[
        "matmul_tiles"]
    problem = _problem(64, 64, (16, 56, 56))
    (phase,) = phase_plan.phases(problem)
    assert contractions.im2col_gemm(problem, phase) == (1, 4 * 16 * 56 * 56, 64, 3 * 64)
    assert policy.matmul_tiles(problem, CPU, spec) == {
        0: render.cpu_compilation_info([1, 56, 64, 0], [1, 14, 32, 0], [0, 0, 0, 8])}
    assert policy.matmul_tiles(_problem(64, 64, (2, 4, 4), batch=1), CPU, spec)[0].count("[1, 16, 32, 0]") == 1
    assert policy.matmul_tiles(_problem(64, 64, (8, 28, 28), stride=2), CPU, spec) == {}  # 8 phases
    assert policy.matmul_tiles(_problem(48, 48, (8, 28, 28)), CPU, spec) == {}             # N = 48


def test_the_tiled_3d_im2col_module_matches_the_definition(monkeypatch, rng):
    """A small 64-channel 3x3x3 problem (16-row tiles), compiled for this machine with the Xeon's tile, against
    float64 in a poisoned destination."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: XEON_HOST)
    problem = _problem(64, 64, (2, 4, 4), batch=1)
    assert "vector_common_parallel = [1, 16, 32, 0]" in policy.module_spec(problem, CPU).mlir
    module = registry.module(problem)
    inputs = module.random_inputs(problem, rng)
    got = run(problem, inputs, out=poisoned(problem.input_shape, problem.dtype)).to_host()
    error = verify.relative_error(got, module.reference(problem, inputs))
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"
