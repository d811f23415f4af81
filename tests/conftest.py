"""Shared test set-up: a hermetic module cache, a fresh printed seed, poisoned destinations."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import shutil
import tempfile
import zlib

import numpy as np
import pytest

# The device the numerics tests run on: the CPU in CI; OPS_TEST_DEVICE=cuda (or hip) on a GPU machine, where
# the modules come from OPS_ARTIFACTS_DIR, compiled ahead of time.
DEVICE = os.environ.get("OPS_TEST_DEVICE", "local-task")

# Hermetic by default: tests compile into their own cache and see no ahead-of-time artifacts
# (tests of the artifacts set OPS_ARTIFACTS_DIR themselves).
_SESSION_DIR = tempfile.mkdtemp(prefix="ops-tests-")
os.environ["OPS_CACHE_DIR"] = os.path.join(_SESSION_DIR, "cache")
if "OPS_TEST_DEVICE" not in os.environ:
    os.environ["OPS_ARTIFACTS_DIR"] = os.path.join(_SESSION_DIR, "no-artifacts")

SEED = int(os.environ.get("OPS_TEST_SEED") or secrets.randbits(31))
os.environ["OPS_TEST_SEED"] = str(SEED)  # pytest-xdist's workers start from this environment: one seed, the printed one


def pytest_sessionfinish(session, exitstatus):
    """The session's cache and artifacts folder go with it (a test run leaves nothing in the temporary directory)."""
    shutil.rmtree(_SESSION_DIR, ignore_errors=True)


def pytest_report_header(config):
    return f"ops test seed: {SEED} (replay with OPS_TEST_SEED={SEED}); device {DEVICE}"


@pytest.fixture
def rng(request):
    """A generator seeded from the session seed and the test's id, so one test replays alone."""
    seed = [SEED, zlib.crc32(request.node.nodeid.encode())]
    print(f"seed {seed} (OPS_TEST_SEED={SEED})")
    return np.random.default_rng(seed)


@pytest.fixture
def seeded(rng):
    """PyTorch's generator seeded from ``rng`` (the tests that use it import PyTorch)."""
    import torch

    torch.manual_seed(int(rng.integers(2**31)))


def poisoned(shape, dtype, device: str = DEVICE):
    """A destination full of NaN: any element the kernel fails to write shows up."""
    from ops import dtypes, runtime

    return runtime.to_device(np.full(shape, np.nan, dtype=dtypes.numpy_dtype(dtype)), device)


def bf16x3_bound(products: int) -> float:
    """The largest error bf16x3 may make in a sum of ``products`` products, as a share of its magnitude (the sum of
    their absolute values): each product at most mid*mid and each factor's remainder past its mid part (within 2^-16
    of the factor after two bfloat16 roundings), 3 * 2^-16 of it; float32's sum adds ``products`` * 2^-24. Where a
    position sums few products its error nears the bound: over 300 seeds up to 1.12 * 2^-16 at 6 products
    (test_data_gemm's ndhwc_s2; 1.19 in a CI run), 0.96 at the corners of test_data_split_conv's asymmetric padding.
    A lost part errs by 2^-8 of its products or more."""
    return 3 * 2.0 ** -16 + products * 2.0 ** -24


def phase_forms(monkeypatch, **keys):
    """The targets' stride-phase forms (ops.policy) with ``keys`` replaced, for the rest of the test."""
    from ops import policy
    from ops.operators import stride_phases

    rule = policy.FORM_RULES[stride_phases.Form]
    monkeypatch.setitem(policy.FORM_RULES, stride_phases.Form,
                        lambda problem, target: [dataclasses.replace(form, **keys) for form in rule(problem, target)])


def gpu_phases(monkeypatch):
    """Backward-data runs the GPU targets' stride phases (no zero taps) on whatever device the test uses."""
    phase_forms(monkeypatch, single_taps="as_is")


def interleaved_store(monkeypatch):
    """Both backward-data operators store through the phase-major tensor (``store="interleave"``, the GPU form)."""
    phase_forms(monkeypatch, store="interleave")


@contextlib.contextmanager
def compiles_nothing():
    """Asserts that the block neither compiled nor loaded a module (bad input is rejected before either)."""
    from ops import compiler, runtime

    before = (compiler.stats["compiles"], runtime.stats["loads"])
    yield
    assert (compiler.stats["compiles"], runtime.stats["loads"]) == before


@pytest.fixture
def nothing_compiles():
    with compiles_nothing():
        yield


def fresh_kernel_calls(monkeypatch) -> None:
    """ops.torch's kernel ops forget their prepared calls (and the paired calls made of them), and the executor its
    ready calls, for the rest of the test: the next call of any signature is prepared and loaded again, with the
    launcher the test chose; what the test made is dropped after it."""
    from ops import executor
    from ops.torch import kernels

    for op in vars(kernels).values():
        if isinstance(op, kernels.KernelOp):
            monkeypatch.setattr(op, "ready", {})
    monkeypatch.setattr(kernels, "_PAIRS", {})
    # the executor's ready calls too (a test that breaks a launcher must not leave its choice to later tests)
    monkeypatch.setattr(executor, "_ready", {})


def iree_threads() -> dict[int, bool]:
    """This process's threads (ids), each with whether it is one of IREE's (its task workers)."""
    from pathlib import Path

    return {int(t.name): (t / "comm").read_text().startswith("iree") for t in Path("/proc/self/task").iterdir()}


def pool_threads() -> int:
    """This process's threads other than IREE's workers (PyTorch's OpenMP workers among them)."""
    return sum(1 for iree in iree_threads().values() if not iree)
