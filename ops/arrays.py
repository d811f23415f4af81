"""The NumPy API's calls: NumPy arrays or IREE DeviceArrays in, results out, through the executor.

``execute`` is ``ops.api.run``'s work: the device found from the arguments, ``out`` checked, the problem's ready
call (``ops.executor.ready`` with the arrays' host, ``runtime.IreeHost``) run on the inputs. ``ready`` and
``known_run`` give the benchmarks and tests the same ready call, and a loaded module's known answer.
"""

from __future__ import annotations

import numpy as np

from . import dtypes, executor, known_answer, runtime
from .validation import check, check_type

_hosts: dict[str, runtime.IreeHost] = {}


def host(driver: str) -> runtime.IreeHost:
    """The one host of DeviceArrays on ``driver``."""
    found = _hosts.get(driver)
    if found is None:
        found = _hosts.setdefault(driver, runtime.IreeHost(driver))
    return found


def ready(problem, driver: str, extra_flags: tuple[str, ...] = (), form=None) -> executor.RuntimeCall:
    """``problem``'s ready call on ``driver`` for DeviceArrays (``executor.ready``): ``call(inputs, outputs)``;
    its ``function`` is the loaded ``runtime.Function``."""
    return executor.ready(problem, host(driver), extra_flags, form)


def known_run(function: runtime.Function, problem, inputs: list, axes: tuple = ()) -> known_answer.Ran:
    """A loaded module of ``problem`` (one a tool loaded itself) on ``inputs`` into poisoned destinations, as the
    executor checks a module (``executor.known_run``)."""
    call = executor.RuntimeCall(function, host(function.driver), problem)
    return executor.known_run(call, inputs, axes)


def _check_out(op: str, out, shape, dtype: str, driver: str) -> None:
    check_type(isinstance(out, runtime.rt.DeviceArray), f"{op}: out must be an IREE DeviceArray, but got {type(out).__name__}")
    got_shape, got_dtype = tuple(int(s) for s in out.shape), dtypes.dtype_name(out.dtype)
    check(got_shape == tuple(shape), f"{op}: out has shape {got_shape}, but the result has shape {tuple(shape)}")
    check(got_dtype == dtype, f"{op}: out has dtype {got_dtype}, but the result has dtype {dtype}")
    check(runtime.driver_of(out._device) == driver, f"{op}: out lives on another device than {driver!r}")


def _empty_batch(results, outs: list, driver: str, keep_on_device: bool):
    """A batch of 0, as PyTorch has it, without compiling: empty results, and zeros where a result sums over
    the batch (a weight gradient), written into ``outs`` when given."""
    arrays = [np.zeros(shape, dtypes.numpy_dtype(dtype)) for shape, dtype in results]
    hal_device = runtime.get_device(driver)
    for array, destination in zip(arrays, outs):
        if array.size:
            semaphore = hal_device.create_semaphore(0)
            zeros = runtime.to_device(array, driver)
            hal_device.queue_copy(zeros._buffer_view.get_buffer(), destination._buffer_view.get_buffer(),
                                  wait_semaphores=[], signal_semaphores=[(semaphore, 1)])
            semaphore.wait(1)
    if outs:
        returned = outs
    elif keep_on_device:
        returned = [runtime.to_device(a, driver) for a in arrays]
    else:
        returned = arrays
    return returned[0] if len(returned) == 1 else tuple(returned)


def execute(problem, inputs: list, *, results: list[tuple[tuple[int, ...], str]], device=None, out=None, form=None):
    """Run ``problem``'s module on ``inputs`` (its function's arguments), writing ``results`` (shape, dtype) into
    destinations: ``ops.api.run``'s work.

    The module's function takes the inputs, then one destination per result (``iree.abi.output``).
    ``out`` (a DeviceArray, or a tuple of them for several results) receives the results in place.
    Returns a NumPy array (a tuple of them for several results), or DeviceArrays when any input or
    ``out`` is a DeviceArray.
    """
    outs = [] if out is None else list(out) if isinstance(out, (tuple, list)) else [out]
    check(
        not outs or len(outs) == len(results),
        f"{problem.op}: out must hold {len(results)} array(s), but got {len(outs)}",
    )
    driver = runtime.resolve_device(problem.op, [*inputs, *outs], device)
    for destination, (shape, dtype) in zip(outs, results):
        _check_out(problem.op, destination, shape, dtype, driver)
    keep_on_device = bool(outs) or any(isinstance(a, runtime.rt.DeviceArray) for a in inputs)
    if problem.batch == 0:
        return _empty_batch(results, outs, driver, keep_on_device)
    call = ready(problem, driver, form=form)
    if known_answer.mode() == "always":
        executor.check_again(call, driver)
    destinations = outs or [runtime.empty(shape, dtype, driver) for shape, dtype in results]
    arrays = [a if isinstance(a, runtime.rt.DeviceArray) else runtime.to_device(a, driver) for a in inputs]
    call(arrays, destinations)
    if keep_on_device:
        returned = destinations
    else:  # copies: to_host() maps the device buffer, which is freed with the DeviceArray (a view would dangle)
        returned = [np.array(r.to_host(), copy=True) for r in destinations]
    return returned[0] if len(returned) == 1 else tuple(returned)
