"""The executor: the one way a compiled module runs, for both APIs.

``ready(problem, host)`` is the one entry point: the NumPy API (``ops.arrays.execute``) and ``ops.torch``
(``ops/torch/calls.py``) both call it. It returns a *ready call*, ``call(inputs, outputs)`` on the host's arrays
(the module's inputs, then its destinations), made once per (problem, host) and kept here: the only cache of
loaded modules.

A *host* is how a caller holds its arrays: IREE DeviceArrays for the NumPy API (``runtime.IreeHost``), PyTorch
tensors for ``ops.torch`` (``calls.TorchHost``). What a host offers:
- ``driver`` (the IREE driver), ``key`` (what tells its calls apart in the cache), ``name`` (its messages' prefix),
  ``queues`` (whether its CPU calls may be queued inside ``cpu_executor.queued_calls``);
- for IREE's runtime: ``hal_device()`` and ``views(hal_device, inputs, outputs, channels_last)`` (HalBufferViews
  on that device), and
  ``before_runtime()`` (what must be done before a synchronous call);
- for launch plans (``launches`` true): ``index`` and ``uuid`` (the GPU), ``identity()`` (the device's known-answer identity),
  ``addresses(inputs, outputs, alignment)``, ``stream()``, ``scratch(sizes)``, ``kept(inputs, stream)``, ``threads()``;
- for the known-answer check: ``put(array, channels_last)``, ``wait()``, ``fetch(outputs, channels_last, axes)``.

The paths (``paths``: the one place that chooses between them), tried in order. Each loads the first of the
problem's modules (``policy.module_specs``) that computes the known answer by that path (``known_answer.Gate``,
through ``known_run``):
- ``plan``: the module's launch plan (``ops/launch``), its kernels issued on the host's CUDA or HIP stream, or its
  dispatch functions on PyTorch's OpenMP threads (``ops.cpu_executor``). Only a host that hands over addresses takes
  it; where the launcher cannot run at all, or a module has no plan, the next path serves (said once).
- ``stream``: IREE's runtime on a device made over the host's HIP stream (``hip_external_stream``, as iree-turbine
  runs it: ROCm's default under ``ops.torch``), one device and one loaded module per stream.
- ``runtime``: IREE's runtime on the host's device, synchronous.
Where every form fails the check by one path, a later path serves only if it computes differently (the CPU
launcher against IREE's workers, the opt-in HIP launcher against IREE's HIP runtime); else the check's error stands.
"""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass
import numpy as np

from . import compiler, cpu_executor, known_answer, policy, runtime, targets
from .validation import say_once

ALIGNMENT = 16  # IREE's GPU kernels assume 16-byte aligned bindings (ConvertToLLVM.cpp: "align 16")


@dataclass(frozen=True)
class Path:
    """One way to run a module: ``kind`` (``plan``, ``stream``, ``runtime``), the launcher's ``backend`` for a plan,
    and whether a later path may serve where every form fails the check by this one (``passes_refusal``)."""

    kind: str
    backend: str = ""
    passes_refusal: bool = False


LAUNCHER_NAMES = {"cuda": "CUDA", "hip": "HIP", "cpu": "CPU"}


def gpu_launcher(target: targets.Target) -> str:
    """How a GPU module runs on a framework's stream: ``"plan"``, its kernels launched by the driver API from the
    module's launch plan (CUDA, whose IREE runtime has no external stream, and ROCm with ``OPS_ROCM_LAUNCHER=plan``),
    or ``"stream"``, IREE's runtime on a device made over the stream (HIP's ``hip_external_stream``, the ROCm
    default)."""
    if target.external_stream and os.environ.get("OPS_ROCM_LAUNCHER", "") != "plan":
        return "stream"
    return "plan"


def paths(target: targets.Target, host) -> list[Path]:
    """The paths that may run a module of ``target`` for ``host``, in order (see the module docstring)."""
    if not host.launches:
        return [Path("runtime")]
    if not target.gpu:
        return [Path("plan", "cpu", True), Path("runtime")] if cpu_executor.launcher() == "plan" else [Path("runtime")]
    last = Path("stream") if target.external_stream else Path("runtime")
    if gpu_launcher(target) == "stream":
        return [last]
    return [Path("plan", host.driver, target.external_stream), last]


_ready: dict[tuple, object] = {}
_lock = threading.Lock()


def ready(problem, host, extra_flags: tuple[str, ...] = (), form=None):
    """``problem``'s ready call for ``host``: loaded once (``load``), then kept (per the paths chosen, so that a
    changed choice loads again). ``extra_flags`` and ``form`` (the operator's Form, or a dict of its keys: the
    benchmarks' and tests' choice) change which modules are tried."""
    chosen = tuple(paths(targets.target_for_device(host.driver), host))
    key = (problem, host.key, chosen, extra_flags, tuple(sorted(form.items())) if isinstance(form, dict) else form)
    found = _ready.get(key)
    if found is None:
        found = load(problem, host, chosen, extra_flags, form)
        with _lock:
            found = _ready.setdefault(key, found)
    return found


def forget() -> None:
    """Let go of every ready call (their loaded modules): the interpreter's exit, and tests that start over."""
    _ready.clear()


runtime.release_at_exit(forget)


def load(problem, host, chosen: tuple[Path, ...], extra_flags: tuple[str, ...] = (), form=None):
    """The ready call of the first of the ``chosen`` paths that serves ``problem``; see the module docstring."""
    specs = policy.module_specs(problem, targets.target_for_device(host.driver), extra_flags, options=form)
    refused = None
    for position, path in enumerate(chosen):
        try:
            served = _through(path, problem, host, specs)
        except known_answer.WrongResultError as error:
            if not path.passes_refusal or position == len(chosen) - 1:
                raise
            refused = error
            continue
        if served is None or isinstance(served, str):  # this path cannot run it (said once for all problems, or now)
            if served:
                say_once(f"{host.name}: {problem.name} runs through IREE's runtime: {served}")
            continue
        if refused is not None:
            say_once(f"{host.name}: {problem.op} ({problem.name}) runs through IREE's runtime: the "
                     f"{LAUNCHER_NAMES[chosen[0].backend]} launcher's forms fail the known-answer check")
        return served
    raise AssertionError("the last path serves or raises")  # paths() ends with a runtime path


def _through(path: Path, problem, host, specs):
    """The ready call ``path`` makes of the first of ``specs`` that passes the check by it, or why it has none."""
    if path.kind == "plan":
        return launched(problem, host, path.backend, specs)
    if path.kind == "stream":
        return StreamCall(problem, host, specs)
    return runtime_call(problem, host, specs, host.hal_device())


def runtime_call(problem, host, specs, hal_device) -> "RuntimeCall":
    """The first of ``specs`` that computes the known answer through IREE's runtime on ``hal_device``, loaded."""

    def load_one(spec, path, data):
        call = RuntimeCall(runtime.loaded_function(spec, data, host.driver, hal_device), host, problem)
        return call, lambda inputs, axes: known_run(call, inputs, axes)

    gate = known_answer.Gate(problem, runtime.device_identity(host.driver), "iree-runtime", load_one)
    compiler.load_first(specs, gate)
    return gate.served


def _launcher(backend: str):
    """The launcher module of ``backend`` (``ops/launch/{backend}.py``), or why this process cannot launch (said
    once for all problems)."""
    name = LAUNCHER_NAMES[backend]
    try:
        launcher = importlib.import_module(f"ops.launch.{backend}")
    except ImportError as error:
        return f"{name} kernels run through IREE's runtime: {error}"
    unavailable = launcher.unavailable()
    return launcher if unavailable is None else f"{name} kernels run through IREE's runtime: {unavailable}"


def launched(problem, host, backend: str, specs=None):
    """The launch-plan call of the first of ``specs`` (by default the problem's, ``policy.module_specs``) that has a
    plan and computes the known answer through ``backend``'s launcher; or why there is none (a str). Every launcher has the same interface: ``unavailable()``, why this process
    cannot launch at all, and ``load(spec, path, data, device_index)``, a module's kernels and plan, or why it has
    none. None where the launcher cannot run in this process (said once)."""
    launcher = _launcher(backend)
    if isinstance(launcher, str):
        say_once(f"{host.name}: {launcher}")
        return None
    if specs is None:
        specs = policy.module_specs(problem, targets.target_for_device(host.driver))
    kind = cpu_executor.CpuLaunchedCall if backend == "cpu" else LaunchedCall

    def load_one(spec, path, data):
        try:
            found = launcher.load(spec, path, data, host.index)
        except OSError as error:  # the driver's library is missing
            return f"the {backend} launcher cannot load it: {error}", None
        if isinstance(found, str):  # no plan: the next path serves it, and checks it there
            return found, None
        call = kind(*found, host, problem)
        call.spec = spec  # what a layer's pair is made of (``joined``)
        return call, lambda inputs, axes: known_run(call, inputs, axes)

    gate = known_answer.Gate(problem, host.identity(), f"{backend}-launch", load_one)
    compiler.load_first(specs, gate)
    return gate.served


def joined(pair, first, second) -> "LaunchedCall | None":
    """The GPU launch-plan call of ``pair`` (``ops/operators/conv_pair.py``), its module made of the modules the
    launch-plan calls ``first`` (its backward-data) and ``second`` (its weight gradient) serve (``policy.pair_spec``),
    loaded as theirs are (artifacts/, the cache, or compiled); None where the policy does not join them, or the
    module cannot be had (said once where it does not compile). Not checked here: the caller takes it only where its
    first results are the two calls' own, bit for bit (``ops.torch.calls.Paired``)."""
    if not (type(first) is type(second) is LaunchedCall):
        return None
    spec, launcher = policy.pair_spec(pair, first.spec, second.spec), _launcher(first.host.driver)
    if spec is None or isinstance(launcher, str):
        return None
    try:
        spec, path, data = compiler.load_first([spec])
    except (compiler.MissingModuleError, compiler.DamagedModuleError):
        return None
    except compiler.CompileError as error:
        say_once(f"{first.host.name}: {pair.name} does not compile; its two gradients run apart: {error}")
        return None
    found = launcher.load(spec, path, data, first.host.index)
    return None if isinstance(found, str) else LaunchedCall(*found, first.host, pair)


class RuntimeCall:
    """A module run through IREE's runtime (``runtime.Function``) on the host's memory, synchronously: on a GPU
    after the host's work so far (``host.before_runtime``), on the CPU as ``cpu_executor.RuntimeCpuCall`` says."""

    def __init__(self, function: runtime.Function, host, problem):
        self.function, self.host, self.problem = function, host, problem
        gpu = targets.target_for_device(host.driver).gpu
        self.cpu = None if gpu else cpu_executor.RuntimeCpuCall(function, host.queues)

    @property
    def transient_bytes(self) -> int | None:
        return self.function.transient_bytes

    def __call__(self, inputs: list, outputs: list) -> None:
        views = self.host.views(self.function.device, inputs, outputs, self.problem.channels_last)
        self.host.before_runtime()
        if self.cpu is not None:
            self.cpu(views)
        else:
            self.function.invoke(views)


class StreamCall:
    """A module run through IREE's runtime on the host's current HIP stream: one IREE device made over each stream
    (``runtime.stream_device``), the module loaded and checked there once, its asynchronous entry point called with
    empty fences (stream order does the rest), the host's own memory."""

    def __init__(self, problem, host, specs):
        self.problem, self.host, self.specs = problem, host, specs
        self.calls: dict[int, RuntimeCall] = {}

    def __call__(self, inputs: list, outputs: list) -> None:
        stream = self.host.stream()
        call = self.calls.get(stream)
        if call is None:
            device = runtime.stream_device(self.host.driver, self.host.index, self.host.uuid, stream)
            call = self.calls[stream] = runtime_call(self.problem, self.host, self.specs, device)
        views = self.host.views(call.function.device, inputs, outputs, self.problem.channels_last)
        call.function.invoke(views, fences=(runtime.rt.HalFence(0), runtime.rt.HalFence(0)))
        self.host.kept(inputs, stream)


class LaunchedCall:
    """A module's launch plan on the host's current CUDA or HIP stream (``ops/launch/cuda.py``, ``hip.py``): its
    transients from the host's allocator, its kernels issued on the stream, never waited for (capturable in a CUDA
    graph)."""

    def __init__(self, kernels, plan, host, problem):
        self.kernels, self.plan, self.host, self.problem = kernels, plan, host, problem
        self.slots = tuple((s.argument, s.transient, s.offset) for s in plan.slots)
        self.transients = plan.transients

    def __call__(self, inputs: list, outputs: list) -> None:
        host = self.host
        kept, addresses = host.addresses(inputs, outputs, ALIGNMENT)  # inputs (aligned copies among them), outputs
        scratch, transients = host.scratch(self.transients)  # held until the kernels are issued
        bases = [addresses[a] + offset if a is not None else transients[t] + offset for a, t, offset in self.slots]
        stream = host.stream()
        self.kernels(bases, stream)
        host.kept(kept[:len(inputs)], stream)  # the inputs the kernels read: the outputs are the stream's own


def known_run(call, inputs: list, axes: tuple = ()) -> known_answer.Ran:
    """``call`` on ``inputs`` (NumPy arrays in the problem's layout) into NaN-filled (or -1) destinations, both put
    on the call's host; its results reduced there to the positions ``axes`` keeps (``known_answer.verify``), then
    brought to the NumPy side, with the whole results' unwritten positions counted."""
    host, channels_last = call.host, call.problem.channels_last
    arrays = [host.put(np.ascontiguousarray(a), channels_last) for a in inputs]
    outputs = [host.put(a, channels_last) for a in known_answer.poisoned(call.problem)]
    call(arrays, outputs)
    host.wait()
    return host.fetch(outputs, channels_last, axes)


def check_again(call, device: str) -> None:
    """``OPS_VERIFY=always``: ``call``'s known answer before it serves, waited for."""
    known_answer.check_again(call.problem, device, lambda inputs, axes: known_run(call, inputs, axes))
