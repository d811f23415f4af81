"""The host path of a kernel call from PyTorch: one ready call per call signature.

A kernel op's first call with a signature (every tensor's shape, strides, dtype and device, and the other
arguments) runs the op's *plan* (``ops/torch/plans.py``: the layout, the destinations, the frozen problem, all
checked) and keeps what it learned as a ``Prepared`` call: which inputs need one ``contiguous()``, the destinations'
shapes, dtypes and memory formats, and the kernel. Later calls with that signature do only what changes:
read the tensors' pointers, allocate the destinations (and the module's transients) from PyTorch's caching
allocator, and launch. No validation, no problem hashing, no host synchronization.

The kernel is the problem's ready call from the executor (``ops.executor.ready``), with PyTorch's tensors as its
host (``TorchHost``): the one place that chooses how a module runs, and checks it first. By device:
- **CUDA** (NVIDIA): the module's launch plan issues its kernels on PyTorch's current stream, read at every call,
  through NVIDIA's driver bindings. Stream order does the rest: PyTorch's kernels that wrote the inputs come
  before, its readers of the results after. The call never waits, so it is capturable in a CUDA graph. Tensors
  used on a stream other than the device's default get ``record_stream``, so the caching allocator does not hand
  their memory out while our kernels may still read it. A module without a plan, or a machine without
  ``cuda-bindings``, runs IREE's runtime instead (synchronously), and says so once.
- **ROCm** (a HIP build of PyTorch): IREE's runtime on PyTorch's current HIP stream, as iree-turbine runs it
  (``executor.StreamCall``); ``OPS_ROCM_LAUNCHER=plan`` opts in to the launch plans instead. None of this has run
  on an AMD GPU (none is reachable where it was written).
- **The CPU**: the module's launch plan on PyTorch's own OpenMP threads (``ops.cpu_executor``, which also holds
  how a call through IREE's runtime shares the cores with PyTorch's pool, and queues a layer's two calls).
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from torch import Tensor
from torch.utils.dlpack import to_dlpack

from .. import cpu_executor, dtypes, executor, known_answer, runtime, targets, validation
from ..validation import check
from .plans import kernel_view


def signature(args: tuple) -> tuple:
    """What decides a call's layout, destinations and kernel: each tensor's shape, strides, dtype and device
    (not its data or storage offset), and every other argument."""
    return tuple([(a.shape, a.stride(), a.dtype, a.device) if isinstance(a, Tensor)  # torch.Size: a tuple
                  else tuple(a) if type(a) is list else a for a in args])


class Prepared:
    """One call signature of one kernel op, ready: ``reads`` are (argument index, whether it needs one
    ``contiguous(memory_format)`` first), ``results`` (shape, dtype) of the destinations in ``memory_format``."""

    __slots__ = ("problem", "reads", "memory_format", "results", "device", "kernel", "empty", "fallback", "always")

    def __init__(self, problem, reads, memory_format, results, device, kernel, empty: bool, fallback=None):
        self.problem, self.reads, self.memory_format, self.results = problem, reads, memory_format, results
        self.device, self.kernel, self.empty = device, kernel, empty
        self.fallback = fallback  # PyTorch's own kernel, where no form of the problem computes its known answer
        self.always = known_answer.mode() == "always" and kernel is not None

    def __call__(self, args: tuple):
        if self.fallback is not None:
            return self.fallback(*args)
        if self.always:  # OPS_VERIFY=always: the known answer first, waited for
            executor.check_again(self.kernel, str(self.device))
        inputs, outputs = self.tensors(args)
        if self.empty:  # an empty batch or channel count: the gradient of nothing is zero (or empty)
            for t in outputs:
                t.zero_()
        else:
            self.kernel(inputs, outputs)
        return self.result(outputs)

    def tensors(self, args: tuple) -> tuple[list, list]:
        """(the kernel's inputs: ``args``' tensors, each in the layout, copied once where it is not; its fresh
        destinations)."""
        memory_format = self.memory_format
        inputs = [args[i].contiguous(memory_format=memory_format) if copy else args[i] for i, copy in self.reads]
        outputs = [torch.empty(shape, dtype=dtype, device=self.device, memory_format=memory_format)
                   for shape, dtype in self.results]
        return inputs, outputs

    @staticmethod
    def result(outputs: list):
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    @property
    def launches(self) -> bool:
        """Whether every call runs this signature's own checked kernel, nothing else first (no fallback, no
        ``OPS_VERIFY=always`` check, not empty)."""
        return self.kernel is not None and not (self.always or self.empty or self.fallback)

    @property
    def launched_on_cpu(self) -> bool:
        """Whether every call runs this signature's kernel through the CPU launcher (nothing else first)."""
        return self.launches and type(self.kernel) is cpu_executor.CpuLaunchedCall


class Paired:
    """Two ready calls of one layer, run one after the other (a convolution's input gradient, then its weight
    gradient): where both launch on the CPU, their plans run in one parallel region of PyTorch's pool (one fork
    and join, one trip through the runner: ``cpu_launch.Kernels.then``); on a GPU, where ``joint`` is given, as the
    one module that computes both (``executor.joined``: grad_out scaled once for the two); else each call as it is,
    on the CPU queued behind each other with one wait where they run through IREE's runtime
    (``cpu_executor.queued_calls``, where ``cpu_executor.layer_calls_queued`` says so: asked only once some CPU call
    runs there). The first launch together is checked, outside a CUDA graph's capture (until then the calls run
    apart): its results must be the two calls' own, bit for bit, or the pair is given up (said once)."""

    __slots__ = ("first", "second", "together", "joint", "checked")

    def __init__(self, first: Prepared, second: Prepared, joint=None):
        self.first, self.second, self.joint = first, second, joint
        self.together = joint is not None or (first.launched_on_cpu and second.launched_on_cpu
                                              and first.kernel.kernels is not second.kernel.kernels)
        self.checked = False

    def __call__(self, first_args: tuple, second_args: tuple) -> tuple:
        if not self.together or (not self.checked and self.joint is not None
                                 and torch.cuda.is_current_stream_capturing()):
            queued = (cpu_executor.runtime_calls and self.first.device.type == "cpu"
                      and cpu_executor.layer_calls_queued())
            with cpu_executor.queued_calls() if queued else contextlib.nullcontext():
                return self.first(first_args), self.second(second_args)
        first_inputs, first_outputs = self.first.tensors(first_args)
        second_inputs, second_outputs = self.second.tensors(second_args)
        if self.joint is not None:  # its arguments: grad_out, the weight (the first's), x (the second's)
            self.joint(first_inputs + second_inputs[:1], first_outputs + second_outputs)
        else:
            self.first.kernel.then(self.second.kernel, first_inputs, first_outputs, second_inputs, second_outputs)
        results = self.first.result(first_outputs), self.second.result(second_outputs)
        if not self.checked:
            results = self._check(first_args, second_args, results)
        return results

    def _check(self, first_args: tuple, second_args: tuple, results: tuple) -> tuple:
        """The first launch's ``results`` against the two calls' own: kept where equal, else the calls' (and the
        pair given up)."""
        own = self.first(first_args), self.second(second_args)
        self.checked = True
        if all(_equal(a, b) for a, b in zip(results, own)):
            return results
        self.together, self.joint = False, None
        validation.say_once(f"ops.torch: {self.first.problem.name} and {self.second.problem.name} launched together differ from "
                 "their own launches; they run one after the other instead")
        return own


def _equal(a, b) -> bool:
    """Bitwise equal results (NaNs included): a tensor, or a tuple of them."""
    if isinstance(a, tuple):
        return all(_equal(x, y) for x, y in zip(a, b))
    # flattened first: a tensor PyTorch calls contiguous may keep any stride on a size-1 dimension (a channels_last
    # (K, C, 1, 1) weight gradient's last is C), and a view as bytes needs the last stride to be 1
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


# --- PyTorch's tensors as the executor's host --------------------------------------------------------------


def aligned(tensors: list, alignment: int) -> list:
    """``tensors``, each at a storage offset that is not a multiple of ``alignment`` bytes replaced by a fresh copy
    (PyTorch's allocations are aligned; a view into a larger buffer need not be)."""
    return [t.clone() if t.data_ptr() % alignment else t for t in tensors]


def _record_streams(tensors: list, device: torch.device, stream: int) -> None:
    """``record_stream`` for tensors a kernel on a non-default stream reads (not while capturing a graph)."""
    if stream != 0 and not torch.cuda.is_current_stream_capturing():
        current = torch.cuda.current_stream(device)
        for t in tensors:
            t.record_stream(current)


class TorchHost:
    """PyTorch's tensors on ``device`` as the executor's host (``ops.executor``'s docstring says what a host offers):
    addresses and PyTorch's current stream for launch plans, DLPack views (no copy) for IREE's runtime, PyTorch's
    caching allocator for transients, PyTorch's thread count for the CPU launcher."""

    launches = True
    queues = True
    name = "ops.torch"

    def __init__(self, device: torch.device, driver: str):
        self.device, self.index, self.driver = device, device.index, driver
        self.key, self.gpu = ("torch", device), device.type != "cpu"

    def identity(self) -> str:
        gpu_name = torch.cuda.get_device_name(self.device) if self.gpu else ""
        return known_answer.device_identity(self.driver, gpu_name)

    @property
    def uuid(self) -> str | None:
        return str(getattr(torch.cuda.get_device_properties(self.device), "uuid", "") or "") or None

    def hal_device(self):
        return runtime.get_device(self.driver)

    @staticmethod
    def views(hal_device, inputs: list, outputs: list, channels_last: bool) -> list:
        """The tensors' memory as IREE HalBufferViews in the problem's layout: ``torch.utils.dlpack.to_dlpack``, no
        copy, and none of ``__dlpack__``'s stream handling (0.5 us a tensor, against 8)."""
        tensors = aligned(inputs, cpu_executor.ALIGNMENT) + outputs
        return [hal_device.from_dlpack_capsule(to_dlpack(kernel_view(t, channels_last))) for t in tensors]

    def before_runtime(self) -> None:
        if self.gpu:  # IREE's call is synchronous: after PyTorch's work on the stream
            torch.cuda.current_stream(self.device).synchronize()

    @staticmethod
    def addresses(inputs: list, outputs: list, alignment: int) -> tuple[list, list[int]]:
        kept = aligned(inputs, alignment) + outputs
        return kept, [t.data_ptr() for t in kept]

    def stream(self) -> int:
        return torch._C._cuda_getCurrentRawStream(self.index)

    def scratch(self, sizes) -> tuple[list, list[int]]:
        tensors = [torch.empty(n, dtype=torch.uint8, device=self.device) for n in sizes]
        return tensors, [t.data_ptr() for t in tensors]

    def kept(self, tensors: list, stream: int) -> None:
        _record_streams(tensors, self.device, stream)

    @staticmethod
    def threads() -> int:
        return torch.get_num_threads()

    def put(self, array: np.ndarray, channels_last: bool) -> Tensor:
        return to_torch(array, self.device, channels_last)

    def wait(self) -> None:
        if self.gpu:
            torch.cuda.current_stream(self.device).synchronize()
        else:
            runtime.finish()  # inside queued_calls(), the call was queued

    @staticmethod
    def fetch(outputs: list, channels_last: bool, axes: tuple) -> known_answer.Ran:
        """The results reduced on their device to the positions ``axes`` keeps, on the host; the whole results'
        unwritten positions counted where they lie."""
        unwritten = sum(int(_unwritten(t).sum()) for t in outputs)
        return known_answer.Ran([to_numpy(_gathered(t, channels_last, axes)) for t in outputs], unwritten)

def _unwritten(t: Tensor) -> Tensor:
    """``known_answer.unwritten`` on ``t``'s device: NaN or infinite, or a negative index."""
    return t < 0 if not t.is_floating_point() else ~torch.isfinite(t)


def to_torch(array, device: torch.device, channels_last: bool) -> Tensor:
    """``array`` as a fresh tensor on ``device`` (PyTorch's allocation); a channels-last problem's array as an
    (N, C, *spatial) view of its NHWC memory."""
    array = np.ascontiguousarray(array)
    if array.dtype.name == "bfloat16":
        t = torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(array)
    t = t.to(device, copy=True)  # PyTorch's allocation (aligned as its kernels and IREE's imports expect)
    return t.permute(0, t.dim() - 1, *range(1, t.dim() - 1)) if channels_last and t.dim() >= 3 else t


def _gathered(t: Tensor, channels_last: bool, axes: tuple) -> Tensor:
    """``t`` in the problem's layout, only the kept positions (gathered on its device)."""
    if channels_last and t.dim() >= 3:
        t = t.permute(0, *range(2, t.dim()), 1)
    for axis, kept in axes:
        t = t.index_select(axis % t.dim(), torch.as_tensor(kept, device=t.device))
    return t


def to_numpy(t: Tensor) -> np.ndarray:
    """``t`` on the host as a NumPy array (bfloat16 as the project's NumPy bfloat16)."""
    t = t.contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.uint16).numpy().view(dtypes.numpy_dtype("bfloat16"))
    return t.numpy()


_hosts: dict[torch.device, TorchHost] = {}


def host(device: torch.device) -> TorchHost:
    """The one host of tensors on ``device`` (``driver_for`` checks the device first)."""
    driver = driver_for(device)
    found = _hosts.get(device)
    if found is None:
        found = _hosts.setdefault(device, TorchHost(device, driver))
    return found


def kernel_for(problem, device: torch.device):
    """The ready call that runs ``problem`` on tensors of ``device`` (``ops.executor.ready``; see the module
    docstring)."""
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            f"ops.torch: {problem.op} meets a new problem ({problem.name}) while a CUDA graph is being captured; "
            "its module must be loaded first: run one eager step with the same shapes before capturing")
    return executor.ready(problem, host(device))

def driver_for(device: torch.device) -> str:
    """The IREE driver that runs kernels on tensors of ``device``."""
    if device.type == "cpu":
        return targets.DEFAULT_DEVICE
    if device.type == "cuda":
        check(device.index == torch.cuda.current_device(),
              f"ops.torch: tensors on {device} are not on the current CUDA device (cuda:{torch.cuda.current_device()}), "
              "where this library's kernels run: use torch.cuda.set_device or torch.cuda.device")
        return "hip" if torch.version.hip else "cuda"
    raise ValueError(f"ops.torch: tensors on {device.type!r} are not supported (cpu and cuda are)")
