"""Compile targets, and which IREE runtime driver runs each.

A target is written ``backend[:arch]``: ``llvm-cpu`` (this host's CPU), ``rocm:gfx942`` (also ``gfx90a``,
``gfx1100``), ``cuda:sm_80``. A call's ``device`` (an IREE driver name) picks the target:
``local-task``/``local-sync`` -> ``llvm-cpu``; ``hip`` -> ``rocm:$OPS_ROCM_ARCH`` (default gfx942);
``cuda`` -> ``cuda:$OPS_CUDA_ARCH`` (default sm_80: IREE 3.13's CUDA target list stops at sm_89, and the
driver JIT-compiles sm_80 PTX on newer GPUs). ``rocm:gfx942`` compiles for the MI300X chip (``ROCM_CHIP``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from .validation import check, check_type

DEFAULT_DEVICE = "local-task"
DEFAULT_ARCH = {"rocm": "gfx942", "cuda": "sm_80", "llvm-cpu": "host"}
ARCH_ENV = {"rocm": "OPS_ROCM_ARCH", "cuda": "OPS_CUDA_ARCH"}
DRIVER_BACKEND = {"local-task": "llvm-cpu", "local-sync": "llvm-cpu", "hip": "rocm", "cuda": "cuda"}
BACKEND_DRIVER = {"llvm-cpu": "local-task", "rocm": "hip", "cuda": "cuda"}
# the targets this project compiles for and tests the lowering of (artifacts, the command line's list)
KNOWN_TARGETS = ("rocm:gfx942", "rocm:gfx90a", "rocm:gfx1100", "cuda:sm_80", "llvm-cpu")
# The chip a ROCm architecture's modules are compiled for, as AMD compiles convolutions for MI300 (fusilli's
# backend.h and iree-turbine's BOO pass the SKU to --iree-rocm-target): the same gfx942 ISA, plus the chip's
# compute-unit count (MI300X: 304), from which IREE's matrix heuristics size workgroup tiles that fill the chip.
# Measured in the ISA, docs/perf/gfx942-flags: more, smaller workgroups on most convolution dispatches, fewer
# VGPRs, and the scratch spills of three layers gone.
ROCM_CHIP = {"gfx942": "mi300x"}


@dataclass(frozen=True)
class Target:
    backend: str
    arch: str

    def __str__(self) -> str:
        return self.backend if self.backend == "llvm-cpu" else f"{self.backend}:{self.arch}"

    # Capabilities: what the policy (ops/policy.py) asks of a target. Nothing else compares backend names.

    @property
    def cpu(self) -> bool:
        """Whether modules run on this host's CPU (IREE's local-task/local-sync drivers)."""
        return self.backend == "llvm-cpu"

    @property
    def gpu(self) -> bool:
        """Whether modules run on a GPU, whose kernels a launch plan can put on a framework's stream."""
        return self.backend in ("cuda", "rocm")

    @property
    def negative_map_coefficients(self) -> bool:
        """Whether IREE's tiling takes an indexing map with a negative coefficient (not on llvm-cpu)."""
        return not self.cpu

    @property
    def transients(self) -> bool:
        """Whether a module takes its intermediates' workspace as its last argument (llvm-cpu; the GPUs'
        intermediates IREE allocates in stream order)."""
        return self.cpu

    @property
    def torch_device(self) -> str:
        """PyTorch's device type for this target's tensors (ROCm builds of PyTorch call theirs ``cuda`` too)."""
        return "cuda" if self.gpu else "cpu"

    @property
    def external_stream(self) -> bool:
        """Whether IREE's runtime can run a module on a framework's stream (HIP's ``hip_external_stream``; IREE's
        CUDA runtime has none)."""
        return self.backend == "rocm"

    @property
    def driver(self) -> str:
        return BACKEND_DRIVER[self.backend]

    @property
    def directory_name(self) -> str:
        return str(self).replace(":", "-")

    def compile_flags(self) -> list[str]:
        # async-external: the entry point takes a wait and a signal fence (ops/runtime.Function), so that PyTorch's
        # HIP stream can run it without a host wait (iree-turbine's path), and so that a CPU call can queue behind
        # the one before it (ops.torch: a layer's two gradients, one wait; cpu_executor.LAYER_CALLS_QUEUED)
        if self.backend == "llvm-cpu":
            return [
                "--iree-hal-target-device=local",
                "--iree-hal-local-target-device-backends=llvm-cpu",
                "--iree-llvmcpu-target-cpu=host",
                "--iree-execution-model=async-external",
            ]
        if self.backend == "rocm":
            chip = ROCM_CHIP.get(self.arch, self.arch)
            return ["--iree-hal-target-device=hip", f"--iree-rocm-target={chip}", "--iree-execution-model=async-external"]
        return ["--iree-hal-target-device=cuda", f"--iree-cuda-target={self.arch}"]

    def machine_fingerprint(self) -> str:
        """What besides the flags decides the code: for ``host`` CPU targets, which CPU this is."""
        return host_cpu() if self.backend == "llvm-cpu" else ""


@functools.lru_cache(maxsize=None)
def _cpuinfo_line(key: str) -> str:
    """The first line of /proc/cpuinfo starting with ``key`` (empty where there is none, or no /proc)."""
    cpuinfo = Path("/proc/cpuinfo")
    text = cpuinfo.read_text() if cpuinfo.exists() else ""
    return next((line for line in text.splitlines() if line.startswith(key)), "")


@functools.lru_cache(maxsize=None)
def host_cpu() -> str:
    """This machine's processor (architecture, model and feature flags), hashed: it does not change while we run."""
    model, flags = _cpuinfo_line("model name"), _cpuinfo_line("flags")
    return hashlib.sha256(f"{platform.machine()}|{model}|{flags}".encode()).hexdigest()[:16]


def host_cpu_flags() -> frozenset[str]:
    """This machine's CPU feature flags as Linux names them (``avx2``, ``avx512f``, ..; empty where /proc/cpuinfo
    is not there): what the CPU tuning table's rules may be keyed on (``tables.rule_applies``)."""
    return frozenset(_cpuinfo_line("flags").partition(":")[2].split())


def parse_target(text: str) -> Target:
    check_type(isinstance(text, str), f"target must be a string such as 'rocm:gfx942', but got {text!r}")
    backend, _, arch = text.partition(":")
    check(backend in DEFAULT_ARCH, f"target backend must be one of {', '.join(DEFAULT_ARCH)}, but got {text!r}")
    arch = arch or DEFAULT_ARCH[backend]
    check(
        backend != "llvm-cpu" or arch == "host",
        f"llvm-cpu targets compile for this host's CPU only, but got {text!r}",
    )
    return Target(backend, arch)


def target_for_device(device: str, op: str | None = None) -> Target:
    """The target a device compiles for; ``op`` (the calling operator) starts every error message."""
    prefix = f"{op}: " if op else ""
    check_type(isinstance(device, str), f"{prefix}device must be an IREE driver name such as 'local-task', but got {device!r}")
    driver = device.split("://", 1)[0]
    check(
        driver in DRIVER_BACKEND,
        f"{prefix}device must be one of {', '.join(DRIVER_BACKEND)} (an IREE driver name), but got {device!r}",
    )
    backend = DRIVER_BACKEND[driver]
    arch = os.environ.get(ARCH_ENV.get(backend, ""), "") or DEFAULT_ARCH[backend]
    return Target(backend, arch)


# --- The matrix intrinsics a tuned configuration names ---------------------------------------------------------

# (backend, element type) -> (intrinsic, M, N, K, subgroup size): what build_tools/tune.py's configurations name
MMA_INTRINSICS = {
    ("cuda", "f16"): ("NV_MMA_SYNC_F32_16x8x16_F16", 16, 8, 16, 32),
    ("cuda", "bf16"): ("NV_MMA_SYNC_F32_16x8x16_BF16", 16, 8, 16, 32),
    ("rocm", "f16"): ("MFMA_F32_16x16x16_F16", 16, 16, 16, 64),
    ("rocm", "bf16"): ("MFMA_F32_16x16x16_BF16", 16, 16, 16, 64),
}


def mma_intrinsic(target: Target, element: str) -> tuple:
    """The matrix intrinsic a tuned configuration on ``target`` uses for ``element`` inputs (IREE 3.13 has no wgmma)."""
    return MMA_INTRINSICS[(target.backend, element)]
