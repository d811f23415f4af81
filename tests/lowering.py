"""Compile a module for a GPU target and read back what the compiler produced: the facts lowering tests assert; and
run a module compiled for the CPU (GPU forms checked there, their GPU attributes cut)."""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ops import compiler, runtime, targets, policy
from ops.launch import plan as launch_plan


@dataclass
class Dispatch:
    name: str          # e.g. "3_conv_2x4x6x2x4_f16xf16xf32"
    mma_kind: str | None
    pipeline: str | None

    @property
    def is_contraction(self) -> bool:
        return any(kind in f"_{self.name}" for kind in ("_conv_", "_matmul", "_matvec"))


@dataclass
class Lowered:
    dispatches: list[Dispatch]
    kernels_isa: dict[str, str]     # ROCm: kernel symbol -> its assembly
    scratch_bytes: dict[str, int]   # ROCm: kernel symbol -> private segment size
    ptx: str                        # CUDA: the whole PTX


def compile_and_dump(name: str, mlir: str, target: str, workdir: Path, extra_flags: tuple[str, ...] = ()) -> Lowered:
    dump = workdir / "dump"
    spec = compiler.ModuleSpec(name, mlir, targets.parse_target(target), tuple(extra_flags))
    compiler.compile_module(spec, workdir / f"{name}.vmfb", dump_dir=dump)
    dispatches = []
    for config in sorted(dump.glob("configured_*.mlir")):
        text = config.read_text()
        function = re.search(r"func\.func @(\S+)\(", text).group(1)
        mma = re.search(r"mma_kind = #iree_gpu\.mma_layout<(\w+)>", text)
        pipeline = re.search(r"pipeline = #iree_gpu\.pipeline<(\w+)>", text)
        # a data-tiled module's encodings are executables of their own (_encoding_N_encode_...), not dispatch_N
        dispatches.append(Dispatch(function.split("_dispatch_", 1)[-1], mma and mma.group(1), pipeline and pipeline.group(1)))
    kernels, scratch = {}, {}
    for asm in dump.glob("*.rocmasm"):
        text = asm.read_text()
        for symbol, body in re.findall(r"\.globl\s+(\S+)\n(.*?)\.end_amdhsa_kernel", text, flags=re.S):
            kernels[symbol] = body
            scratch[symbol] = int(re.search(r"\.amdhsa_private_segment_fixed_size (\d+)", body).group(1))
    ptx = "\n".join(p.read_text() for p in dump.glob("*.ptx"))
    return Lowered(dispatches, kernels, scratch, ptx)


def configured_ir(workdir: Path) -> str:
    """Every dispatch's configured IR that ``compile_and_dump`` (or ``compiler.compile_module``'s dump) wrote under
    ``workdir``'s dump folder, joined: where a test looks for the tile a dispatch was given."""
    return "\n".join(p.read_text() for p in sorted((workdir / "dump").glob("configured_*.mlir")))


def shipped(problem, target: str, workdir: Path):
    """(spec, ``compile_and_dump``) of the module the runtime and the ahead-of-time build use: the tuning tables'
    choices, and of the operator's alternative forms the first that compiles."""
    specs = policy.module_specs(problem, targets.parse_target(target))
    for spec in specs[:-1]:
        try:
            return spec, compile_and_dump(problem.name, spec.mlir, target, workdir, spec.extra_flags)
        except compiler.CompileError:
            continue
    return specs[-1], compile_and_dump(problem.name, specs[-1].mlir, target, workdir, specs[-1].extra_flags)


def compile_as_shipped(problem, target: str, workdir: Path) -> Lowered:
    return shipped(problem, target, workdir)[1]


# a target's matrix instructions: (IREE's MMA kind prefix, what the compiled code issues)
MATRIX_INSTRUCTIONS = {"cuda:sm_80": ("NV_MMA_SYNC", "mma.sync.aligned"), "rocm:gfx942": ("MFMA_F32_", "v_mfma")}


def one_matrix_contraction(problem, target: str, workdir: Path, name: str) -> Lowered:
    """``problem`` compiled as shipped for ``target``, asserting that one dispatch (named with ``name``) contracts
    with the target's matrix instructions, configured and issued, and on ROCm that no dispatch uses scratch."""
    lowered = compile_as_shipped(problem, target, workdir)
    contractions = [d for d in lowered.dispatches if d.mma_kind]
    assert len(contractions) == 1, lowered.dispatches
    assert name in contractions[0].name, contractions[0].name
    kind, instruction = MATRIX_INSTRUCTIONS[target]
    assert contractions[0].mma_kind.startswith(kind), contractions[0].mma_kind
    if target.startswith("rocm"):
        assert instruction in kernel_for(lowered, contractions[0])
        assert all(size == 0 for size in lowered.scratch_bytes.values()), lowered.scratch_bytes
    else:
        assert instruction in lowered.ptx
    return lowered


def kernel_for(lowered: Lowered, dispatch: Dispatch) -> str:
    matches = [body for symbol, body in lowered.kernels_isa.items() if symbol.endswith(dispatch.name)]
    assert len(matches) == 1, f"no single kernel named *{dispatch.name} in {list(lowered.kernels_isa)}"
    return matches[0]


def workgroup_counts(spec: compiler.ModuleSpec, workdir: Path) -> dict[str, int]:
    """Dispatch name (as ``Dispatch.name``) -> its workgroup count, read from ``spec``'s HAL-level program (the
    launch plan's grids: every module here has static shapes)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "module.mlir").write_text(spec.mlir)
    subprocess.run([compiler.compiler_tool(), "module.mlir", *spec.flags, "--compile-to=hal", "-o", "module.hal.mlir"],
                   cwd=workdir, check=True, capture_output=True)
    plan, _ = launch_plan.extract((workdir / "module.hal.mlir").read_text())
    return {plan.executables[d.executable].exports[d.export].name.split("_dispatch_", 1)[1]: math.prod(d.grid)
            for d in plan.dispatches}


# A pinned configuration: an op's ``attrs = {compilation_info = ..}``, or one entry of its attribute dict
_GPU_CONFIG = re.compile(r"( attrs = \{compilation_info = #iree_codegen\.compilation_info<[^\n]*>>\}"
                         r"|, compilation_info = #iree_codegen\.compilation_info<[^\n]*>>(?=\}))")


def tile_lists(info: str) -> dict[str, list[int]]:
    """A SIMT ``compilation_info``'s reduction, thread and workgroup tiles, by name (empty: none in ``info``)."""
    return {name: [int(v) for v in values.split(", ")]
            for name, values in re.findall(r"(reduction|thread|workgroup) = \[([\d, ]+)\]", info)}


def without_gpu_configs(mlir: str) -> str:
    """``mlir`` with every pinned ``#iree_codegen.compilation_info`` cut (a GPU form, to compile for the CPU)."""
    return _GPU_CONFIG.sub("", mlir)


def gpu_module_on_cpu(problem, spec: compiler.ModuleSpec, operator, rng, workdir: Path,
                      result_shape) -> tuple[float, float]:
    """(max |ours - reference|, max |reference|): ``spec``, a GPU module of ``problem``, its pinned configurations
    cut, compiled for and run on the CPU with ``operator``'s random inputs, against its float64 reference."""
    cpu = compiler.ModuleSpec(problem.name, without_gpu_configs(spec.mlir), targets.parse_target("llvm-cpu"), (),
                              problem.summary)
    inputs = operator.random_inputs(problem, rng)
    ours = run_on_cpu(cpu, inputs, np.zeros(result_shape, dtype=np.asarray(inputs[0]).dtype), workdir)
    reference = operator.reference(problem, inputs)
    return float(np.abs(ours - reference).max()), float(np.abs(reference).max())


def run_on_cpu(spec: compiler.ModuleSpec, inputs: list, result: np.ndarray, workdir: Path) -> np.ndarray:
    """The result, in float64, of ``spec`` (an llvm-cpu module) compiled in ``workdir`` and run on ``inputs``, writing
    into ``result`` (zeros of the result's shape and dtype)."""
    vmfb = compiler.compile_module(spec, workdir / "m.vmfb")
    function = runtime.loaded_function(spec, vmfb.read_bytes(), "local-task", runtime.get_device("local-task"))
    *_, out = function(*inputs, result)
    return np.asarray(np.asarray(out.to_host()), np.float64)
