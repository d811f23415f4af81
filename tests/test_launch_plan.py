"""Launch plans read from IREE's HAL-level programs (ops/launch/plan.py), checked without a GPU against what the
compiler produced: the kernels' PTX signatures and hsaco symbols, a fresh HAL program's dispatch list, the
stored digests; and the PyTorch call path's alignment fallback."""

from __future__ import annotations

import re
import subprocess

import pytest
import torch

from ops import compiler, targets, tuning
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
    spec, path, data = compiler.load_first(tuning.module_specs(problem, target))
    return spec, path, data, compiler.load_plan(compiler.root_of(path), path, data)


def _fresh_hal(spec, tmp_path) -> str:
    source = tmp_path / "module.mlir"
    source.write_text(spec.mlir)
    out = tmp_path / "module.hal.mlir"
    subprocess.run([compiler.compiler_tool(), str(source), *spec.flags, "--compile-to=hal", "-o", str(out)], check=True)
    return out.read_text()


def _check_against_the_program(plan, spec, tmp_path):
    hal = _fresh_hal(spec, tmp_path)
    assert len(plan.dispatches) == hal.count("hal.command_buffer.dispatch<") >= 1
    fresh, _ = launch_plan.extract(hal)
    assert fresh.commands == plan.commands and fresh.slots == plan.slots and fresh.transients == plan.transients
    assert [e.exports for e in fresh.executables] == [e.exports for e in plan.executables]
    assert launch_plan.Plan.from_json(plan.to_json()) == plan
    for d in plan.dispatches:
        for slot, offset, length in d.bindings:
            s = plan.slots[slot]
            assert offset + length <= s.length and offset % 16 == 0


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
    for executable in plan.executables:
        images, _ = launch_plan.read_images(data[executable.offset: executable.offset + executable.nbytes], "rocm-hsaco-fb")
        symbols = set().union(*(flatbuffer.elf_symbols(image) for image in images))
        for export in executable.exports:
            assert export.name in symbols and f"{export.name}.kd" in symbols and export.shared_bytes == 0


def test_a_damaged_plan_or_module_is_not_used(store, tmp_path):
    spec, path, data, plan = _compiled(PROBLEMS["conv_bwd_data_s2"](), "cuda:sm_80")
    stored = compiler.plan_path(path)
    text = stored.read_text()
    stored.write_text(text.replace('"grid": [', '"grid": [1, ', 1))
    try:
        assert "digest" in compiler.load_plan(compiler.root_of(path), path, data)
    finally:
        stored.write_text(text)
    e = plan.executables[0]
    moved = data[:e.offset] + b"\0" + data[e.offset:]
    assert "not at its recorded place" in compiler.load_plan(compiler.root_of(path), path, moved)


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
    kernel = calls.LaunchedKernel(lambda bases, stream: seen.append(bases), plan, torch.device("cpu"))
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: 0, raising=False)
    storage = torch.arange(8, dtype=torch.float32)
    aligned, misaligned = storage[:4], storage[1:5]
    assert aligned.data_ptr() % 16 == 0 and misaligned.data_ptr() % 16 != 0
    out = torch.empty(4)
    kernel([aligned], [out])
    assert seen[-1][:2] == [aligned.data_ptr(), out.data_ptr()]
    kernel([misaligned], [out])
    assert seen[-1][0] % 16 == 0 and seen[-1][0] != misaligned.data_ptr() and seen[-1][1] == out.data_ptr()
