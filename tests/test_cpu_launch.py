"""CPU modules launched on PyTorch's own OpenMP threads (ops/launch/cpu.py, elf.py): the plans read from their HAL
programs (memoized command buffers, and inline ones with a transient workspace and fills), the launcher's results
against IREE's runtime on the same inputs (bitwise, into poisoned destinations), and ops.torch's choice of it,
with IREE's runtime where the launcher cannot serve."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from conftest import fresh_kernel_calls, pool_threads  # noqa: E402

from ops import compiler, cpu_executor, executor, policy, registry, runtime, targets  # noqa: E402
from ops.launch import cpu as cpu_launch  # noqa: E402
from ops.launch import elf  # noqa: E402
from ops.launch import plan as launch_plan  # noqa: E402
from ops.launch import store as plan_store  # noqa: E402
from ops.launch.store import plan_of  # noqa: E402
from ops.operators import avgpool3d, conv_bwd_data, grouped_conv_bwd_weight, maxpool2d, maxpool2d_fwd  # noqa: E402
from ops.torch import calls, functional, kernels  # noqa: E402

CPU = targets.target_for_device("local-task")


def problems(rng) -> dict:
    """One problem of each kind of module: a memoized command buffer (a 1 x 1 backward-data, no workspace), and
    inline ones with a workspace (a strided backward-data, a strided 1 x 1 one, whose result is a copy out of the
    workspace, a grouped weight gradient, max pooling's pads as fills, its forward's -inf fills of 4 and 2 bytes, a
    3-D average pooling); sizes drawn from ``rng``."""
    n, c = int(rng.integers(1, 4)), int(rng.integers(2, 6))
    return {
        "pointwise_data": conv_bwd_data.problem_from_params(
            batch=n, in_channels=c, out_channels=2 * c, input_spatial=(int(rng.integers(4, 9)), 7),
            filter_spatial=(1, 1), layout="NCHW", dtype="float32"),
        "strided_data": conv_bwd_data.problem_from_params(
            batch=n, in_channels=c, out_channels=3, input_spatial=(9, int(rng.integers(6, 11))), filter_spatial=(3, 3),
            stride=(2, 2), padding=((1, 1), (1, 1)), layout="NCHW", dtype="float32"),
        "strided_pointwise_data": conv_bwd_data.problem_from_params(
            batch=n, in_channels=c, out_channels=8, input_spatial=(int(rng.integers(6, 10)), 7), filter_spatial=(1, 1),
            stride=(2, 2), layout="NCHW", dtype="float32"),
        "grouped_weight": grouped_conv_bwd_weight.problem_from_params(
            batch=n, groups=2, in_channels=2 * c, out_channels=4, input_spatial=(int(rng.integers(8, 12)), 9),
            filter_spatial=(3, 3), padding=((1, 1), (1, 1)), layout="NCHW", dtype="float32"),
        "maxpool_backward": maxpool2d.problem_from_params(
            batch=n, channels=c, input_spatial=(int(rng.integers(7, 12)), 10), kernel_size=3, stride=2, padding=1,
            layout="NCHW", dtype="float32"),
        "maxpool_forward": maxpool2d_fwd.problem_from_params(  # phases: a 4-byte fill (-inf), then a transpose
            batch=n, channels=c, input_spatial=(int(rng.integers(7, 12)), 10), kernel_size=3, stride=2, padding=1,
            layout="NCHW", dtype="float32"),
        "maxpool_forward_half": maxpool2d_fwd.problem_from_params(  # a 2-byte fill
            batch=n, channels=c, input_spatial=(int(rng.integers(7, 12)), 10), kernel_size=3, stride=2, padding=1,
            layout="NCHW", dtype="float16"),
        "avgpool_backward": avgpool3d.problem_from_params(
            batch=n, channels=c, input_spatial=(4, 6, int(rng.integers(4, 9))), kernel_size=2, layout="NCDHW",
            dtype="float32"),
    }


def _stored(problem):
    spec, path, data = compiler.load_first(policy.module_specs(problem, CPU))
    return spec, path, data, plan_store.load(compiler.root_of(path), path, data)


def test_cpu_modules_have_plans_of_both_kinds(rng):
    """A module without a workspace records a memoized command buffer; one with a workspace records it inline, and
    its plan binds the workspace (of the size IREE's reflection gives) as the last slot."""
    found = {name: _stored(problem) for name, problem in problems(rng).items()}
    for name, (spec, path, data, plan) in found.items():
        assert isinstance(plan, launch_plan.Plan), f"{name}: {plan}"
        assert plan.dispatches and all(e.format in launch_plan.CPU_FORMATS for e in plan.executables)
        assert [s.argument for s in plan.slots if s.argument is not None] == list(range(len(plan.arguments)))
        function = runtime.load_specs([spec], "local-task")
        assert plan.transients == ((function.transient_bytes,) if function.transient_bytes else ())
    assert not found["pointwise_data"][3].transients
    pool = found["maxpool_backward"][3]
    assert pool.transients and pool.slots[-1].transient == 0
    assert any(isinstance(c, launch_plan.Fill) for c in pool.commands), "max pooling's pads fill the workspace"
    for name, pattern_bytes in (("maxpool_forward", 4), ("maxpool_forward_half", 2)):  # -inf, not one byte repeated
        assert any(isinstance(c, launch_plan.Fill) and c.pattern_bytes == pattern_bytes
                   for c in found[name][3].commands), name
    assert any(isinstance(c, launch_plan.Copy) for c in found["strided_pointwise_data"][3].commands)


def _launched(problem, rng) -> tuple[list, list]:
    """``problem``'s module on random inputs through the CPU launcher and through IREE's runtime, each into
    NaN-filled destinations."""
    module = registry.module(problem)
    inputs = module.random_inputs(problem, rng)
    spec, path, data, plan = _stored(problem)
    found = cpu_launch.load(spec, path, data)
    assert not isinstance(found, str), found
    kernel = cpu_executor.CpuLaunchedCall(*found, calls.host(torch.device("cpu")), problem)
    tensors = [torch.from_numpy(np.ascontiguousarray(a)).clone() for a in inputs]
    poison = [np.full(shape, np.nan if np.dtype(dtype).kind == "f" else -1, dtype=dtype)
              for shape, dtype in module.results(problem)]
    ours = [torch.from_numpy(a).clone() for a in poison]  # PyTorch's allocation: aligned as IREE's code assumes
    kernel(tensors, ours)
    function = runtime.load_specs([spec], "local-task")
    outs = [runtime.to_device(a, "local-task") for a in poison]
    function(*[runtime.to_device(a, "local-task") for a in inputs], *outs)
    return [t.numpy() for t in ours], [o.to_host() for o in outs]


@pytest.mark.parametrize("name", ["pointwise_data", "strided_data", "strided_pointwise_data", "grouped_weight",
                                  "maxpool_backward", "maxpool_forward", "maxpool_forward_half", "avgpool_backward"])
def test_the_launcher_computes_what_irees_runtime_computes(rng, name):
    problem = problems(rng)[name]
    ours, irees = _launched(problem, rng)
    for a, b in zip(ours, irees):
        assert not np.isnan(b).any()
        assert np.array_equal(a, b), f"{problem.name}: the launcher's result differs from IREE's runtime's"


@pytest.mark.parametrize("huge_pages", [True, False])
def test_the_launch_workspace_is_aligned_zero_filled_and_ours_to_the_last_byte(huge_pages):
    """cpu_launch.Workspace (cpu_executor.launch_workspace's): page-aligned (IREE's code assumes 64 bytes), aligned to a
    huge page where advised (so that its 2 MB pages start at its start), zero-filled, and every byte of the size
    asked for writable and read back."""
    import ctypes
    import mmap

    size = 3 * cpu_launch.HUGE_PAGE + 4096 + 8
    workspace = cpu_launch.Workspace(size, huge_pages)
    assert workspace.size >= size and workspace.address % mmap.PAGESIZE == 0
    if huge_pages and hasattr(mmap, "MADV_HUGEPAGE"):
        assert workspace.address % cpu_launch.HUGE_PAGE == 0
    view = (ctypes.c_uint8 * size).from_address(workspace.address)
    assert not any(view[i] for i in (0, 1, size // 2, size - 2, size - 1))
    ctypes.memset(workspace.address, 0xA5, size)
    assert view[0] == view[size // 2] == view[size - 1] == 0xA5


@pytest.mark.parametrize("huge_pages", [True, False])
def test_the_launcher_computes_what_irees_runtime_computes_in_either_workspace(rng, huge_pages, monkeypatch):
    """A module with a workspace (a grouped weight gradient's gathered windows) through the launcher, its workspace
    in huge pages or not (cpu_executor.WORKSPACE_HUGE_PAGES), made fresh for this test: IREE's runtime's bits."""
    monkeypatch.setattr(cpu_executor, "WORKSPACE_HUGE_PAGES", huge_pages)
    made, workspace = [], cpu_launch.Workspace
    monkeypatch.setattr(cpu_launch, "Workspace", lambda size, huge: made.append((huge, workspace(size, huge))) or made[-1][1])
    cpu_executor.release_launch_workspace()
    ours, irees = _launched(problems(rng)["grouped_weight"], rng)
    assert made and made[-1][0] == huge_pages and made[-1][1].size > 0  # the call made its own
    assert all(np.array_equal(a, b) for a, b in zip(ours, irees))


@pytest.mark.parametrize("backend", ["cpu", "cuda", "hip"])
def test_every_launcher_has_the_one_interface_the_executor_uses(backend):
    """ops.executor.launched calls any launcher the same way: ``unavailable()``, then ``load(spec, path, data,
    device_index)``. Read from each module's source, so that the CUDA launcher (whose import needs NVIDIA's
    driver bindings) is checked here too."""
    import ast
    from pathlib import Path

    source = Path(cpu_launch.__file__).with_name(f"{backend}.py").read_text()
    functions = {node.name: node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    assert [a.arg for a in functions["unavailable"].args.args] == []
    assert [a.arg for a in functions["load"].args.args][:4] == ["spec", "path", "data", "device_index"]
    assert backend in executor.LAUNCHER_NAMES


def test_each_executable_is_its_own_library(rng):
    """Two modules' executables, loaded one after the other, keep their own functions (the system's loader knows a
    library by its path: each stays at its own)."""
    names = []
    for problem in list(problems(rng).values())[:2]:
        spec, path, data, plan = _stored(problem)
        _, containers = plan_of(spec, path, data)
        names.append({f.name for f in elf.load(containers[0]).functions})
    assert names[0] and names[1] and not names[0] & names[1]


# --- ops.torch ---------------------------------------------------------------------------------------------


@pytest.fixture
def fresh_calls(monkeypatch):
    """No call prepared before the test (under another launcher) is reused; two threads."""
    fresh_kernel_calls(monkeypatch)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def conv_case(rng, side: int | None = None) -> tuple:
    """A grouped, strided convolution's input, weight and output gradient, of a random size (or ``side``)."""
    torch.manual_seed(int(rng.integers(2**31)))
    side = side or int(rng.integers(9, 16))
    x, w = torch.randn(2, 8, side, side, requires_grad=True), torch.randn(8, 4, 3, 3, requires_grad=True)
    return x, w, torch.randn(F.conv2d(x, w, stride=2, padding=1, groups=2).shape)


def gradients(conv, x, w, grad) -> tuple:
    return torch.autograd.grad(conv(x, w, stride=2, padding=1, groups=2), (x, w), grad)


def kernels_made() -> list:
    return [call.kernel for op in (kernels.conv_backward_input, kernels.conv_backward_weight)
            for call in op.ready.values()]


def served_by(kind, ours, x, w, grad) -> None:
    """Both gradients' kernels are ``kind``, and ``ours`` are PyTorch's gradients."""
    assert kernels_made() and all(type(k) is kind for k in kernels_made())
    for a, b in zip(ours, gradients(F.conv2d, x, w, grad)):
        assert float((a - b).norm() / b.norm()) < 1e-5


def test_ops_torch_launches_cpu_modules_on_pytorchs_threads(fresh_calls, rng):
    """The default: both gradients through the launcher, PyTorch's pool kept (not released), PyTorch's answer."""
    assert cpu_executor.launcher() == "plan"
    x, w, grad = conv_case(rng)
    gradients(functional.conv2d, x, w, grad)  # the kernels made and checked
    assert kernels_made() and all(type(k) is cpu_executor.CpuLaunchedCall for k in kernels_made())
    torch.relu(torch.randn(1 << 22))  # a parallel region: the pool's threads made
    with_pool = pool_threads()
    ours = gradients(functional.conv2d, x, w, grad)
    assert pool_threads() == with_pool
    for a, b in zip(ours, gradients(F.conv2d, x, w, grad)):
        assert float((a - b).norm() / b.norm()) < 1e-5


def test_ops_cpu_launcher_runtime_keeps_irees_runtime(fresh_calls, rng, monkeypatch):
    monkeypatch.setenv("OPS_CPU_LAUNCHER", "runtime")
    x, w, grad = conv_case(rng)
    ours = gradients(functional.conv2d, x, w, grad)
    served_by(executor.RuntimeCall, ours, x, w, grad)


def test_without_a_runner_irees_runtime_runs_the_module_and_says_why(fresh_calls, rng, monkeypatch):
    monkeypatch.setattr(cpu_launch, "_runner", lambda directory: "no C compiler (cc, or $CC) to build the CPU runner with")
    x, w, grad = conv_case(rng)
    with pytest.warns(RuntimeWarning, match="CPU kernels run through IREE's runtime: no C compiler"):
        ours = gradients(functional.conv2d, x, w, grad)
    served_by(executor.RuntimeCall, ours, x, w, grad)


def test_a_launcher_computing_a_wrong_answer_is_refused(fresh_calls, rng, monkeypatch):
    """The known-answer check runs through the launcher (``cpu-launch``): a launch that writes nothing is refused,
    said once, and IREE's runtime computes the gradients."""
    monkeypatch.setattr(cpu_executor.CpuLaunchedCall, "__call__", lambda self, inputs, outputs: None)
    x, w, grad = conv_case(rng, int(rng.integers(17, 21)))  # a size no other test draws: its verdicts are not known yet
    with pytest.warns(RuntimeWarning, match="runs through IREE's runtime: the CPU launcher's forms fail the "
                                            "known-answer check"):
        ours = gradients(functional.conv2d, x, w, grad)
    served_by(executor.RuntimeCall, ours, x, w, grad)


@pytest.mark.parametrize("threads", [1, 3])
def test_the_launcher_runs_on_any_team_size(rng, threads):
    """PyTorch's thread count is the team's: one thread runs every workgroup; more threads than cores split them
    unevenly. Either way the result is IREE's runtime's."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        ours, irees = _launched(problems(rng)["grouped_weight"], rng)
    finally:
        torch.set_num_threads(before)
    assert all(np.array_equal(a, b) for a, b in zip(ours, irees))


def test_a_launched_layer_never_asks_the_queueing_policy(fresh_calls, rng, monkeypatch):
    """A convolution layer's two gradient calls queue behind each other only through IREE's runtime: until a CPU
    kernel runs there (cpu_executor.runtime_calls), the layer's backward does not ask the policy (an environment
    read, 12-17 us a layer inside a step)."""
    monkeypatch.setattr(cpu_executor, "runtime_calls", 0)
    monkeypatch.setattr(cpu_executor, "layer_calls_queued", lambda: pytest.fail("the queueing policy was asked"))
    case = conv_case(rng, int(rng.integers(9, 16)))
    for ours, theirs in zip(gradients(functional.conv2d, *case), gradients(F.conv2d, *case)):
        assert float((ours - theirs).norm() / theirs.norm()) < 1e-5
    assert cpu_executor.runtime_calls == 0


def test_calls_from_two_threads_at_once_keep_their_own_results(fresh_calls, rng):
    """Two Python threads calling the same kernels concurrently (each launch holds its kernels' lock; a thread that
    is not PyTorch's main one makes its own OpenMP team)."""
    from concurrent.futures import ThreadPoolExecutor

    side = int(rng.integers(9, 16))
    cases = [conv_case(rng, side) for _ in range(2)]  # one signature: the same kernels, different tensors
    expected = [gradients(F.conv2d, *case) for case in cases]
    gradients(functional.conv2d, *cases[0])  # the kernels made and checked

    def repeated(case):
        return [gradients(functional.conv2d, *case) for _ in range(20)]

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(repeated, cases))
    for got, want in zip(results, expected):
        for ours in got:
            for a, b in zip(ours, want):
                assert float((a - b).norm() / b.norm()) < 1e-5


def test_a_cached_module_without_a_plan_gets_one_on_first_use_or_keeps_irees_runtime(rng, monkeypatch):
    """A module compiled before CPU plans were read (no plan, no reason beside it) gets its plan from its HAL program
    compiled again (``plan_store.ensure``); where that cannot compile, the reason is kept and nothing raises."""
    problem = problems(rng)["strided_data"]
    spec, path, data, plan = _stored(problem)
    plan_store.plan_path(path).unlink()
    plan_store.ensure(spec, path, data)
    again = plan_store.load(compiler.root_of(path), path, data)
    assert isinstance(again, launch_plan.Plan) and again == plan
    plan_store.plan_path(path).unlink()
    monkeypatch.setattr(compiler, "compiler_tool", lambda: "/nonexistent/iree-compile")
    plan_store.ensure(spec, path, data)
    assert "could not be compiled again" in plan_store.load(compiler.root_of(path), path, data)
    plan_store.unsupported_path(path).unlink()
    monkeypatch.undo()  # the cache is left as found: a later test that draws this problem finds its plan
    plan_store.ensure(spec, path, data)
    assert plan_store.load(compiler.root_of(path), path, data) == plan


def test_a_damaged_plan_is_rebuilt_once_and_then_loads_without_a_warning(rng):
    """A stored plan that no longer matches its recorded digest is rebuilt from the module's HAL program and
    written again, with one warning, as a damaged module is; the next load finds it intact and says nothing."""
    import warnings

    spec, path, data, plan = _stored(problems(rng)["strided_data"])
    stored = plan_store.plan_path(path)
    stored.write_bytes(stored.read_bytes()[:-40])  # truncated
    assert "does not match its recorded SHA-256 digest" in plan_store.load(compiler.root_of(path), path, data)
    with pytest.warns(RuntimeWarning, match=rf"{stored.name} did not match its recorded SHA-256 digest; rebuilding"):
        loaded = cpu_launch.load(spec, path, data)
    assert not isinstance(loaded, str) and loaded[1] == plan
    assert compiler.digest_path(stored).read_text().strip() == compiler.digest(stored.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = cpu_launch.load(spec, path, data)
    assert not isinstance(again, str) and again[1] == plan


def test_a_layers_two_gradients_launch_together_as_the_two_calls_would(fresh_calls, rng, monkeypatch):
    """On the eager path a convolution's input and weight gradients are one paired call (calls.Paired): both plans
    in one parallel region (cpu_launch.Kernels.then), with the two separate launches' bits and PyTorch's answer."""
    paired = []
    original = cpu_launch.Kernels.then
    monkeypatch.setattr(cpu_launch.Kernels, "then", lambda self, *args: paired.append(self) or original(self, *args))
    x, w, grad = conv_case(rng)
    for memory_format in (torch.contiguous_format, torch.channels_last):
        x_, grad_ = (t.detach().contiguous(memory_format=memory_format) for t in (x, grad))
        x_.requires_grad_()
        paired.clear()
        ours = gradients(functional.conv2d, x_, w, grad_)
        ours_again = gradients(functional.conv2d, x_, w, grad_)  # after the first launch's check
        assert len(paired) == 2 and all(p.together and p.checked for p in kernels._PAIRS.values())
        separate = (kernels.conv_backward_input.run(grad_, w.detach(), None, list(x.shape), [2, 2], [1, 1, 1, 1],
                                                    [1, 1], 2, False),
                    kernels.conv_backward_weight.run(x_.detach(), grad_, list(w.shape), [2, 2], [1, 1, 1, 1], [1, 1], 2,
                                                     False))
        for a, b, c, d in zip(ours, ours_again, separate, gradients(F.conv2d, x, w, grad)):
            assert torch.equal(a, c) and torch.equal(b, c) and a.stride() == c.stride()
            assert float((a - d).norm() / d.norm()) < 1e-5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_channels_last_pointwise_layers_paired_launch_is_checked_and_kept(fresh_calls, rng, dtype):
    """A channels_last 1x1 layer's weight gradient, (K, C, 1, 1), is contiguous to PyTorch with a last stride of C:
    the paired launch's bitwise check compares it all the same (it once raised there), keeps the pair, and both
    gradients are PyTorch's."""
    torch.manual_seed(int(rng.integers(2**31)))
    x = torch.randn(2, 8, 6, 6, dtype=dtype).contiguous(memory_format=torch.channels_last).requires_grad_()
    w = torch.randn(16, 8, 1, 1, dtype=dtype).contiguous(memory_format=torch.channels_last).requires_grad_()
    grad = torch.randn(2, 16, 6, 6, dtype=dtype).contiguous(memory_format=torch.channels_last)
    ours = torch.autograd.grad(functional.conv2d(x, w), (x, w), grad)
    assert [(p.together, p.checked) for p in kernels._PAIRS.values()] == [(True, True)]
    for a, b in zip(ours, torch.autograd.grad(F.conv2d(x.double(), w.double()), (x, w), grad.double())):
        assert float((a.double() - b).norm() / b.norm()) < (1e-5 if dtype == torch.float32 else 1e-2)


def test_a_pair_launching_other_bits_than_its_calls_is_given_up(fresh_calls, rng, monkeypatch):
    """The first paired launch is checked against the two calls': where it differs (here: it writes nothing), the
    calls' results are returned, the pair is given up, and that is said once."""
    monkeypatch.setattr(cpu_executor.CpuLaunchedCall, "then", lambda self, *args: None)
    x, w, grad = conv_case(rng)
    with pytest.warns(RuntimeWarning, match="launched together differ from their own launches"):
        ours = gradients(functional.conv2d, x, w, grad)
    assert [p.together for p in kernels._PAIRS.values()] == [False]
    for a, b in zip(ours, gradients(F.conv2d, x, w, grad)):
        assert float((a - b).norm() / b.norm()) < 1e-5
    with pytest.raises(ValueError, match="a plan cannot run after itself"):
        kernel = next(iter(kernels.conv_backward_input.ready.values())).kernel.kernels
        kernel.then(kernel, [], [], 2)
