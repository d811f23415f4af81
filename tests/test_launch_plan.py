"""Launch plans read from IREE's HAL-level programs (ops/launch/plan.py), checked without a GPU against what the
compiler produced: the kernels' PTX signatures and hsaco symbols, a fresh HAL program's dispatch list, the
stored digests; and the PyTorch call path's alignment fallback."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

import iree.runtime as rt
import numpy as np

from ops import arrays, compiler, executor, targets, policy
from ops.launch import store as plan_store
from ops.launch import flatbuffer
from ops.launch import plan as launch_plan
from ops.operators import conv_bwd_data, grouped_conv_bwd_weight
from ops.torch import calls

# a strided backward-data (several phases, a transient) and a grouped weight gradient (a batch split)
PROBLEMS = {
    "conv_bwd_data_s2": lambda: conv_bwd_data.problem_from_params(
        batch=2, in_channels=8, out_channels=16, input_spatial=(9, 9), filter_spatial=(3, 3), stride=(2, 2),
        dilation=(1, 1), padding=((1, 1), (1, 1)), layout="NHWC", dtype="float16"),
    "grouped_bwd_weight": lambda: grouped_conv_bwd_weight.problem_from_params(
        batch=4, groups=4, in_channels=8, out_channels=8, input_spatial=(8, 8), filter_spatial=(3, 3),
        stride=(1, 1), dilation=(1, 1), padding=((1, 1), (1, 1)), layout="NHWC", dtype="float32"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory, monkeypatch_module):
    monkeypatch_module.setenv("OPS_CACHE_DIR", str(tmp_path_factory.mktemp("plans")))
    return compiler.cache_dir()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _compiled(problem, target_name):
    target = targets.parse_target(target_name)
    spec, path, data = compiler.load_first(policy.module_specs(problem, target))
    return spec, path, data, plan_store.load(compiler.root_of(path), path, data)


def _fresh_hal(spec, tmp_path) -> str:
    return _hal_program(spec.mlir, spec.flags, tmp_path)


def _hal_program(mlir: str, flags, directory) -> str:
    """IREE's HAL-level program of ``mlir`` compiled with ``flags`` (``--compile-to=hal``), made afresh."""
    source = directory / "module.mlir"
    source.write_text(mlir)
    out = directory / "module.hal.mlir"
    subprocess.run([compiler.compiler_tool(), str(source), *flags, "--compile-to=hal", "-o", str(out)], check=True)
    return out.read_text()


def _check_against_the_program(plan, spec, tmp_path):
    _check_against(plan, _fresh_hal(spec, tmp_path))


def _check_against(plan, hal: str):
    """``plan`` is what ``hal`` says: dispatches, workgroup counts, constants, binding slots and offsets, transients,
    each export's block, shared memory and arity; bindings in range and aligned; arguments packed one pointer a
    binding, then one u32 a constant."""
    assert len(plan.dispatches) == hal.count("hal.command_buffer.dispatch<") >= 1
    fresh, _ = launch_plan.extract(hal)
    assert fresh.commands == plan.commands and fresh.slots == plan.slots and fresh.transients == plan.transients
    assert fresh.arguments == plan.arguments
    assert [e.exports for e in fresh.executables] == [e.exports for e in plan.executables]
    assert launch_plan.Plan.from_json(plan.to_json()) == plan
    for d in plan.dispatches:
        for slot, offset, length in d.bindings:
            s = plan.slots[slot]
            assert offset + length <= s.length and offset % 16 == 0
        packed = launch_plan.kernel_arguments(d)
        export = plan.executables[d.executable].exports[d.export]
        assert [kind for kind, *_ in packed] == ["pointer"] * export.bindings + ["u32"] * export.constants


def _check_hsaco(plan, data: bytes):
    """Each gfx942 executable's hsaco holds the kernels the plan names (and their descriptors)."""
    for executable in plan.executables:
        images, _ = launch_plan.read_images(data[executable.offset: executable.offset + executable.nbytes], "rocm-hsaco-fb")
        symbols = set().union(*(flatbuffer.elf_symbols(image) for image in images))
        for export in executable.exports:
            assert export.name in symbols and f"{export.name}.kd" in symbols and export.shared_bytes == 0


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_a_cuda_plan_agrees_with_its_ptx_and_the_hal_program(name, store, tmp_path):
    spec, path, data, plan = _compiled(PROBLEMS[name](), "cuda:sm_80")
    assert not isinstance(plan, str), plan
    _check_against_the_program(plan, spec, tmp_path)
    for executable in plan.executables:
        container = data[executable.offset: executable.offset + executable.nbytes]
        images, image_of = launch_plan.read_images(container, executable.format)
        for export, image in zip(executable.exports, image_of):
            ptx = images[image].decode()
            entry = ptx[ptx.index(f".entry {export.name}("):]
            params = entry[:entry.index(")")]
            assert params.count(".param .u64") == export.bindings and params.count(".param .u32") == export.constants
            assert re.search(r"\.maxntid (\d+), (\d+), (\d+)", entry).groups() == tuple(map(str, export.block))
            assert ("__dynamic_shared_memory__" in entry.split(".entry")[0] + entry[:4000]) or export.shared_bytes == 0


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_a_gfx942_plan_agrees_with_its_hsaco_and_the_hal_program(name, store, tmp_path):
    spec, path, data, plan = _compiled(PROBLEMS[name](), "rocm:gfx942")
    assert not isinstance(plan, str), plan
    _check_against_the_program(plan, spec, tmp_path)
    _check_hsaco(plan, data)


ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"  # the committed ones (tests see none by default)


def _committed_gfx942() -> list[dict]:
    manifest = json.loads((ARTIFACTS / "manifest.json").read_text())
    return [m for m in manifest["modules"] if m["target"] == "rocm:gfx942"]


def test_every_committed_gfx942_module_has_a_plan_that_agrees_with_a_fresh_hal_program(tmp_path):
    """For each module in artifacts/: its launch plan is recorded in the manifest with a matching digest, locates
    the module's executables, agrees with the HAL-level program compiled afresh from the module's own MLIR and
    flags (async-external: the program ROCm's runtime path calls with fences), and its hsaco holds the kernels."""
    records = _committed_gfx942()
    assert len(records) >= 60

    def check(numbered):
        number, record = numbered
        root = ARTIFACTS
        vmfb = root / record["module"]
        data = compiler.verified(root, vmfb)
        assert data is not None, record["module"]
        assert record["launch_plan"] == plan_store.plan_path(vmfb).relative_to(root).as_posix()
        plan = plan_store.load(root, vmfb, data)
        assert not isinstance(plan, str), plan
        assert record["dispatches"] == len(plan.dispatches)
        directory = tmp_path / str(number)
        directory.mkdir()
        _check_against(plan, _hal_program(vmfb.with_suffix(".mlir").read_text(), record["flags"], directory))
        _check_hsaco(plan, data)
        return record["module"]

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        checked = list(pool.map(check, enumerate(records)))
    assert len(checked) == len(records)


def test_a_damaged_plan_or_module_is_not_used(store, tmp_path):
    spec, path, data, plan = _compiled(PROBLEMS["conv_bwd_data_s2"](), "cuda:sm_80")
    stored = plan_store.plan_path(path)
    text = stored.read_text()
    stored.write_text(text.replace('"grid": [', '"grid": [1, ', 1))
    try:
        assert "digest" in plan_store.load(compiler.root_of(path), path, data)
    finally:
        stored.write_text(text)
    e = plan.executables[0]
    moved = data[:e.offset] + b"\0" + data[e.offset:]
    assert "not at its recorded place" in plan_store.load(compiler.root_of(path), path, moved)


def test_a_program_that_is_not_static_has_no_plan(store, tmp_path):
    spec, *_ = _compiled(PROBLEMS["conv_bwd_data_s2"](), "cuda:sm_80")
    hal = _fresh_hal(spec, tmp_path)
    dynamic = re.sub(r"workgroups\(\[%c\w+,", "workgroups([%runtime_value,", hal, count=1)
    with pytest.raises(launch_plan.UnsupportedModule, match="workgroup count is %runtime_value, not a constant"):
        launch_plan.extract(dynamic)
    with pytest.raises(launch_plan.UnsupportedModule, match="hal.device.queue.copy"):
        launch_plan.extract(hal.replace("hal.fence.create device", "hal.device.queue.copy device", 1))


def test_kernel_arguments_are_pointers_then_constants():
    dispatch = launch_plan.Dispatch(0, 0, (4, 1, 1), (7, 0xFFFFFFFF), ((2, 64, 128), (0, 0, 32)))
    assert launch_plan.kernel_arguments(dispatch) == [("pointer", 2, 64), ("pointer", 0, 0), ("u32", 7, 0),
                                                      ("u32", 0xFFFFFFFF, 0)]


def test_a_misaligned_input_is_launched_from_an_aligned_copy(monkeypatch):
    """A view with a storage offset that breaks the kernels' 16-byte alignment is copied first; aligned tensors are
    passed as they are (CPU tensors stand in for device memory: only pointers are read)."""
    plan = launch_plan.Plan("f", (launch_plan.Argument((4,), "f32", 16, False), launch_plan.Argument((4,), "f32", 16, True)),
                            (64,), (launch_plan.Slot(0, None, 0, 16), launch_plan.Slot(1, None, 0, 16),
                                    launch_plan.Slot(None, 0, 0, 64)), (), ())
    seen = []
    kernel = executor.LaunchedCall(lambda bases, stream: seen.append(bases), plan, calls.host(torch.device("cpu")), None)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: 0, raising=False)
    storage = torch.arange(8, dtype=torch.float32)
    aligned, misaligned = storage[:4], storage[1:5]
    assert aligned.data_ptr() % 16 == 0 and misaligned.data_ptr() % 16 != 0
    out = torch.empty(4)
    kernel([aligned], [out])
    assert seen[-1][:2] == [aligned.data_ptr(), out.data_ptr()]
    kernel([misaligned], [out])
    assert seen[-1][0] % 16 == 0 and seen[-1][0] != misaligned.data_ptr() and seen[-1][1] == out.data_ptr()


def test_an_async_external_module_runs_with_fences_as_a_synchronous_one(rng):
    """ROCm's and the CPU's modules take a wait and a signal fence (``--iree-execution-model=async-external``, the
    entry point ops.torch calls on PyTorch's HIP stream with empty fences, or queues on the CPU). On the CPU, the
    same problem compiled both ways (IREE's default, async-internal, is synchronous at the call) gives the same
    bits, called plainly (the function waits on its own fence) or with the caller's fences (it returns at once;
    the caller waits), and the float64 reference's values."""
    problem = PROBLEMS["conv_bwd_data_s2"]()
    inputs = conv_bwd_data.random_inputs(problem, rng)
    plain = arrays.ready(problem, "local-task", extra_flags=("--iree-execution-model=async-internal",)).function
    fenced = arrays.ready(problem, "local-task").function
    assert fenced.fenced and not plain.fenced

    def destination():
        return np.full(problem.input_shape, np.nan, dtype=inputs[0].dtype)

    expected = plain(*inputs, destination())[-1].to_host()
    assert np.array_equal(fenced(*inputs, destination())[-1].to_host(), expected)
    signal = rt.HalFence.create_at(fenced.device.create_semaphore(0), 1)
    result = fenced(*inputs, destination(), fences=(rt.HalFence(0), signal))[-1]
    signal.wait()
    assert np.array_equal(result.to_host(), expected)
    reference = conv_bwd_data.reference(problem, inputs)
    error = np.linalg.norm(expected.astype(np.float64) - reference) / np.linalg.norm(reference)
    assert error < 2e-3, error


class _StandInHip:
    """Records the HIP runtime calls the launcher makes (no AMD GPU here): handles are counters, launches keep the
    argument values the kernel would read."""

    def __init__(self):
        self.calls, self.names, self.counter = [], {}, 1000

    def _new(self, out, name=None) -> int:
        self.counter += 1
        out._obj.value = self.counter
        self.names[self.counter] = name
        return 0

    def hipSetDevice(self, index):
        self.calls.append(("device", index))
        return 0

    def hipModuleLoadData(self, module, image):
        self.calls.append(("load", bytes(image[:4])))
        return self._new(module)

    def hipModuleGetFunction(self, function, module, name):
        return self._new(function, name.decode())

    def hipModuleLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        count = self.arguments[self.names[function.value]]
        slots = (ctypes.c_void_p * count).from_address(params)
        values = [ctypes.c_uint64.from_address(slot).value for slot in slots]
        self.calls.append(("launch", self.names[function.value], (gx, gy, gz), (bx, by, bz), shared, stream.value, values))
        return 0

    def _memset(self, width):
        return lambda address, value, count, stream: self.calls.append(("fill", width, address, value, count)) or 0

    def __getattr__(self, name):
        widths = {"hipMemsetD8Async": 1, "hipMemsetD16Async": 2, "hipMemsetD32Async": 4}
        if name in widths:
            return self._memset(widths[name])
        raise AttributeError(name)

    def hipMemcpyDtoDAsync(self, target, source, length, stream):
        self.calls.append(("copy", target, source, length))
        return 0


def test_the_opt_in_hip_launcher_issues_a_committed_gfx942_plan_as_it_says():
    """The ROCm launcher (ops/launch/hip.py, opt-in, not run on an AMD GPU) against a stand-in HIP runtime, on a
    committed gfx942 module of 15 dispatches and 3 fills: each hsaco loaded, each kernel found by name, the
    commands issued in order on the given stream with the plan's grid and block and the argument block IREE's HIP
    HAL packs (each binding's base + offset, then the constants), fills as the plan says."""
    from ops.launch import hip as launch_hip

    record = next(m for m in _committed_gfx942() if m["dispatches"] == 15)
    vmfb = ARTIFACTS / record["module"]
    data = compiler.verified(ARTIFACTS, vmfb)
    plan = plan_store.load(ARTIFACTS, vmfb, data)
    stand_in = _StandInHip()
    stand_in.arguments = {e.name: e.bindings + e.constants for x in plan.executables for e in x.exports}
    kernels = launch_hip.Kernels(plan, [data[e.offset: e.offset + e.nbytes] for e in plan.executables], 3, stand_in)
    assert stand_in.calls[0] == ("device", 3) and all(c == ("load", b"\x7fELF") for c in stand_in.calls[1:])
    bases = [(1 << 40) + (i << 32) for i in range(len(plan.slots))]
    stand_in.calls.clear()
    kernels(bases, 0xABC0)
    expected = []
    for command in plan.commands:
        if isinstance(command, launch_plan.Dispatch):
            export = plan.executables[command.executable].exports[command.export]
            values = [bases[slot] + offset if kind == "pointer" else slot
                      for kind, slot, offset in launch_plan.kernel_arguments(command)]
            expected.append(("launch", export.name, command.grid, export.block, 0, 0xABC0, values))
        elif isinstance(command, launch_plan.Fill):
            expected.append(("fill", command.pattern_bytes, bases[command.slot] + command.offset, command.pattern,
                             command.length // command.pattern_bytes))
        else:
            expected.append(("copy", bases[command.target] + command.target_offset,
                             bases[command.source] + command.source_offset, command.length))
    assert stand_in.calls == expected
    assert sum(c[0] == "launch" for c in expected) == 15 and sum(c[0] == "fill" for c in expected) == 3


def test_a_module_compiled_by_the_compiler_alone_gets_its_launch_plan(tmp_path):
    """A process that imports only the compiler (a build tool's ``find_or_compile``) still stores each module's
    launch plan beside it: the plan store joins the compiler's HAL program readers when ``ops`` is imported. A GPU
    machine without a compiler cannot make the plan later (it once fell back to IREE's runtime there)."""
    import subprocess
    import sys

    script = ("from ops import compiler, policy, targets\n"
              "from ops.operators import conv_bwd_data\n"
              "p = conv_bwd_data.problem_from_params(batch=1, in_channels=2, out_channels=3, input_spatial=(5, 5),"
              " filter_spatial=(3, 3), padding=1, layout='NHWC', dtype='float32')\n"
              "print(compiler.find_or_compile(policy.module_spec(p, targets.parse_target('llvm-cpu'))))\n")
    environment = {**os.environ, "OPS_CACHE_DIR": str(tmp_path), "OPS_QUIET": "1"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment, check=True)
    vmfb = Path(out.stdout.strip().splitlines()[-1])
    assert vmfb.is_file() and plan_store.plan_path(vmfb).is_file(), sorted(p.name for p in vmfb.parent.iterdir())

