"""Known-answer checks: a compiled module is trusted on a device only after it has computed a known answer there.

Before a module serves its first call on a device, it runs once on the library's own inputs (``random_inputs``,
seeded from the problem's name: finite, never the user's data) and its results are compared with float64 values
from the operator's definition (``reference``). The verdict is recorded in the user's cache under a key of the
module's SHA-256, the device, the launch path and the runtime's version, so later processes trust a passed module
without running it again, and a failed one is never served (``ops.compiler.load_first`` takes the next form).

What is compared:
- Results of at most ``WHOLE`` elements whose reference sums at most ``WORK`` terms, whole.
- Larger ones on a stratified sample, chosen by what each axis is (the operator's ``roles``, ``ops/roles.py``),
  never by its size: every spatial position (so every stride phase, padded border, first and last row and
  column) and every group are kept; of each batch or channel index that indexes every result (a result reads only
  the same values of it), the first, the last and two drawn at random. A channel the results do not index (a
  reduced one, backward-data's K) and a batch summed over (backward-weight's) stay whole. Only the kept positions
  are computed, by the same reference on the inputs sliced along the same indices, so the reference costs that
  fraction of the whole.
- Each position's tolerance is what a right kernel's float32 sum, rounded once to the result's dtype, can be off:
  ``2 u_out |expected| + 8 sqrt(L) u_32 sum |terms|``, where ``u`` is the unit roundoff of the result's dtype and
  of the float32 accumulator, ``L`` the largest number of terms of a position and ``sum |terms|`` the sum of the
  magnitudes of its terms (the reference on the inputs' absolute values), plus the result dtype's smallest normal
  number (a GPU may flush subnormals to zero). A NaN, an infinity or an index off by one fails. (The result's
  rounding scales with the result, not with its terms: with ``2 u_out sum |terms|``, a 16-bit weight gradient
  over 100,352 terms that summed 8 extra terms in every 392 passed.)

``OPS_VERIFY``: ``first`` (the default) checks once per module, device, path and runtime; ``always`` checks before
every call and waits for it (a debugging mode for faults that depend on what ran before, which one check at
first use cannot see); ``off`` never checks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import math
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from . import roles
from .validation import check, warn_caller

MODES = ("first", "always", "off")
WHOLE = 1 << 18  # results up to this many elements are checked whole ...
WORK = 1 << 27  # ... if their reference sums no more terms than this (a weight gradient's sums are long)
KEPT = 4  # of each sampled index (a channel within its group, a batch index): the first, the last, two at random
SAMPLED_KINDS = ("batch", "channel")  # the pointwise kinds sampled; groups are kept whole
# 2: the sample by declared roles (version 1 sliced any input whose first extent equalled the batch, a weight too),
# and no unwritten position anywhere in the results; 3: the result's rounding bounded by the result's value, not by
# its terms' magnitudes (version 2 passed a wrong 16-bit module whose error was 1% of those magnitudes)
CHECK_VERSION = 3
_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
_TINY = {"float32": 2.0 ** -126, "float16": 2.0 ** -14, "bfloat16": 2.0 ** -126}


class WrongResultError(RuntimeError):
    """No compiled form of a problem computes its known answer on this device. ``problem`` is the problem;
    ``worst``, the worst verdict's description (for a one-line account of the refusal)."""

    def __init__(self, message: str, problem=None, worst: str = ""):
        super().__init__(message)
        self.problem, self.worst = problem, worst


@dataclass(frozen=True)
class Verdict:
    passed: bool
    worst: float  # the largest |result - expected| / tolerance over the checked positions (above 1 fails)
    position: tuple  # that position, in the result's layout (result index first)
    expected: float
    got: float
    checked: int  # positions compared
    unwritten: int = 0  # positions of the whole results, compared or not, left NaN, infinite or -1 (an index)

    def describe(self) -> str:
        text = (f"{self.checked} positions checked; worst at {self.position}: {self.got!r} where {self.expected!r} "
                f"was expected ({self.worst:.3g} times its tolerance)")
        return text + (f"; {self.unwritten} positions of the whole results are NaN, infinite or -1 (unwritten or "
                       "wrong)" if self.unwritten else "")


@dataclass(frozen=True)
class Ran:
    """What a check's run returns: its results reduced to the sampled positions, and how many positions of the
    whole results are NaN, infinite or (an index) negative. The inputs are finite and every operator's answer is
    finite on them, so any such position is wrong, sampled or not: a NaN-filled destination left unwritten shows."""

    results: list
    unwritten: int


def mode() -> str:
    value = os.environ.get("OPS_VERIFY", "first")
    check(value in MODES, f"OPS_VERIFY must be one of {', '.join(MODES)}, but got {value!r}")
    return value


# --- The check -----------------------------------------------------------------------------------------------


def inputs_for(problem) -> list:
    """The library's own inputs for ``problem``: ``random_inputs`` seeded from its name."""
    from .registry import module

    return module(problem).random_inputs(problem, np.random.default_rng(zlib.crc32(problem.name.encode())))


def verify(problem, run: Callable[[list, tuple], "Ran"]) -> Verdict:
    """Run ``problem``'s module on ``inputs_for(problem)`` and judge its results. ``run(inputs, axes)`` returns a
    ``Ran``: the results as host arrays reduced to the sampled positions (``axes``, (axis, kept indices) pairs
    applied in order; on a GPU, gathered there, so that only they come to the host) and the whole results' count of
    unwritten positions."""
    inputs = inputs_for(problem)
    sample = sample_of(problem, inputs)
    return _judged(problem, sample, run(inputs, sample.axes))


def judge(problem, inputs: list, results: list) -> Verdict:
    """Whole ``results`` of ``problem`` on ``inputs`` against the float64 reference (see the module docstring)."""
    sample = sample_of(problem, inputs)
    return _judged(problem, sample, gathered(results, sample.axes))


def gathered(results: list, axes: tuple) -> Ran:
    """Whole host ``results`` as a check's run returns them: reduced to ``axes``, their unwritten positions counted."""
    arrays = [np.asarray(r) for r in results]
    return Ran([take(a, axes) for a in arrays], sum(int(np.count_nonzero(unwritten(a))) for a in arrays))


def unwritten(array) -> np.ndarray:
    """Where ``array`` holds what no right answer here holds: NaN or an infinity, or a negative index."""
    if np.issubdtype(array.dtype, np.integer):
        return array < 0
    return ~np.isfinite(np.asarray(array, np.float32) if array.dtype.itemsize < 4 else array)


def sample_of(problem, inputs: list) -> "_Sample":
    """The positions checked of ``problem``'s results: all of them when they are few and cheap, else a sample."""
    size = max(math.prod(shape) for shape, _ in _results(problem))
    return _sample(problem, inputs, whole=size <= WHOLE and size * _terms(problem) <= WORK)


def poisoned(problem) -> list:
    """Destinations for ``problem``'s results, filled with NaN (indices with -1): a position the module does not
    write shows up."""
    from .dtypes import numpy_dtype

    return [np.full(shape, -1 if dtype.startswith("int") else np.nan, dtype=numpy_dtype(dtype))
            for shape, dtype in _results(problem)]


def take(result, axes: tuple):
    """``result`` reduced to the sampled positions (``axes``: see ``verify``)."""
    for axis, kept in axes:
        result = np.take(result, kept, axis=axis)
    return result


def _judged(problem, sample: "_Sample", ran: Ran) -> Verdict:
    expected, magnitudes = _expected(problem, sample.inputs)
    verdicts = []
    for number, (got, want, magnitude) in enumerate(zip(ran.results, expected, magnitudes)):
        if np.issubdtype(np.asarray(want).dtype, np.integer):  # indices: exact
            bound = np.zeros(np.shape(want))
        else:
            bound = tolerance(problem, number, magnitude, want)
        verdicts.append(_worst(number, got, np.asarray(want), bound))
    worst = max(verdicts, key=lambda v: v.worst)
    return dataclasses.replace(worst, passed=worst.passed and ran.unwritten == 0,
                               checked=sum(v.checked for v in verdicts), unwritten=ran.unwritten)


def tolerance(problem, number: int, magnitude, expected):
    """Each position's tolerance in ``problem``'s result ``number``, from its expected value and its sum of term
    magnitudes (see the module docstring), plus the result dtype's smallest normal: a GPU may flush subnormal
    results to zero."""
    dtype = _results(problem)[number][1]
    unit = _ROUNDOFF.get(dtype, 0.0)
    summed = 8 * math.sqrt(_terms(problem)) * _ROUNDOFF["float32"]
    return 2 * unit * np.abs(expected) + (summed + problem.term_roundoff) * magnitude + _TINY.get(dtype, 0.0)


def _worst(number: int, got, want, tolerance) -> Verdict:
    got64 = np.asarray(got, dtype=np.float64)
    want64 = np.asarray(want, dtype=np.float64)
    error = np.abs(got64 - want64)
    with np.errstate(over="ignore"):  # an exact position (an index, tolerance 0) off by any amount: infinitely
        ratio = np.where(error <= tolerance, 0.0, error / np.maximum(tolerance, np.finfo(np.float64).tiny))
    ratio = np.where(np.isfinite(got64), ratio, np.inf)
    flat = int(np.argmax(ratio)) if ratio.size else 0
    where = np.unravel_index(flat, ratio.shape) if ratio.size else ()
    worst = float(ratio[where]) if ratio.size else 0.0
    return Verdict(worst <= 1.0, worst, (number, *map(int, where)), float(want64[where]) if ratio.size else 0.0,
                   float(got64[where]) if ratio.size else 0.0, int(ratio.size))


def _operator(problem):
    from .registry import module

    return module(problem)


def _results(problem) -> list:
    return _operator(problem).results(problem)


def _terms(problem) -> int:
    """The largest number of terms summed into one result position (the operator's ``terms``)."""
    return _operator(problem).terms(problem)


# --- Samples: by the operator's declared roles (ops/roles.py) ---------------------------------------------------


@dataclass(frozen=True)
class _Sample:
    inputs: list  # the inputs, sliced to the kept positions
    axes: tuple  # the results' (axis, kept positions) pairs

    def take(self, result):
        return take(result, self.axes)


def _kept(extent: int, rng) -> np.ndarray:
    """The values kept of a sampled index: the first, the last, two drawn at random (all of a short one)."""
    if extent <= KEPT:
        return np.arange(extent)
    drawn = rng.choice(np.arange(1, extent - 1), KEPT - 2, replace=False)
    return np.unique(np.concatenate([[0, extent - 1], drawn]))


def _sampled(declared: roles.Roles, rng) -> dict:
    """The sampled indices and their kept values: the batch and channel indices that index every result (a
    result reads only the same values of them), in the order the first result's axes name them."""
    per_result = [{index for axis in axes for index in axis} for axes in declared.results]
    shared = set.intersection(*per_result)
    ordered = dict.fromkeys(index for axis in declared.results[0] for index in axis)
    return {index: _kept(index.extent, rng) for index in ordered
            if index in shared and index.kind in SAMPLED_KINDS and index.extent > KEPT}


def _positions(axes: tuple, kept: dict) -> tuple:
    """(axis, kept positions) of each axis holding a sampled index; a fused axis keeps every combination of its
    indices' kept values (the others whole), outer first."""
    pairs = []
    for number, axis in enumerate(axes):
        if not any(index in kept for index in axis):
            continue
        positions = np.zeros(1, dtype=np.int64)
        for index in axis:
            values = kept.get(index, np.arange(index.extent))
            positions = (positions[:, None] * index.extent + values[None, :]).ravel()
        pairs.append((number, positions))
    return tuple(pairs)


def _sample(problem, inputs: list, whole: bool) -> _Sample:
    """Every result position, or a sample of the batch and channel indices that every result keeps (see the module
    docstring): each input sliced by the roles its operator declares for its axes, never by its sizes."""
    if whole:
        return _Sample(list(inputs), ())
    declared = _operator(problem).roles(problem)
    check(len(declared.inputs) == len(inputs), f"{problem.op}: roles declares {len(declared.inputs)} inputs, "
                                               f"but the check has {len(inputs)}")
    kept = _sampled(declared, np.random.default_rng(zlib.crc32(problem.name.encode()) + 1))
    sliced = [take(a, _positions(axes, kept)) for a, axes in zip(inputs, declared.inputs)]
    result_axes = {tuple((axis, tuple(p)) for axis, p in _positions(axes, kept)) for axes in declared.results}
    check(len(result_axes) == 1, f"{problem.op}: its results keep different sampled axes ({result_axes})")
    return _Sample(sliced, _positions(declared.results[0], kept))


def _expected(problem, inputs: list) -> tuple[list, list]:
    """The float64 values of the sampled results, and each position's sum of term magnitudes (the operator's
    ``magnitudes``)."""
    operator = _operator(problem)
    values = operator.reference(problem, inputs)
    values = list(values) if isinstance(values, tuple) else [values]
    return values, operator.magnitudes(problem, inputs, values)


# --- The record ----------------------------------------------------------------------------------------------


def runtime_version() -> str:
    """The installed IREE runtime's version (what runs the checks); empty without one."""
    try:
        from iree.runtime.version import VERSION
    except ImportError:
        return ""
    return VERSION


def record_key(module_sha256: str, device: str, path: str) -> str:
    """What a verdict is recorded under: the module's bytes, the device, the launch path, the runtime's version and
    the check's (``CHECK_VERSION``: a verdict of an earlier check, which may have refused a right module, is not
    recalled)."""
    parts = (module_sha256, device, path, runtime_version(), f"check-{CHECK_VERSION}")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _record_path(key: str, passed: bool) -> Path:
    from .compiler import cache_dir

    return cache_dir() / "verified" / f"{key}.{'pass' if passed else 'fail'}"


_remembered: dict[str, Verdict] = {}  # this process's verdicts, also where the cache cannot be written


def recalled(key: str) -> Verdict | None:
    """The recorded verdict of ``key``; a pass is final whatever else was recorded."""
    if key in _remembered:
        return _remembered[key]
    for passed in (True, False):
        path = _record_path(key, passed)
        if path.is_file():
            try:
                fields = json.loads(path.read_text())
                return Verdict(**{**fields, "position": tuple(fields["position"])})
            except (ValueError, TypeError, KeyError):  # a damaged record is no record
                continue
    return None


def remember(key: str, verdict: Verdict) -> None:
    """Record ``verdict`` in the cache (atomically); where the cache is not writable, for this process only."""
    from . import compiler

    _remembered[key] = verdict
    if compiler.writes_elsewhere():  # said once already, by the compiler
        return
    try:
        compiler.atomic_write(_record_path(key, verdict.passed), json.dumps(dataclasses.asdict(verdict)).encode())
    except OSError as error:
        warn_caller(f"ops: known-answer verdicts cannot be recorded in {_record_path(key, True).parent} ({error}); "
                    "they are kept for this process only")


def ensure(problem, module_sha256: str, device: str, path: str, run: Callable[[list, tuple], Ran]) -> Verdict | None:
    """The verdict on ``problem``'s module (``run``) on ``device`` by ``path``: recalled (``first``) or checked now;
    None when ``OPS_VERIFY=off``."""
    how = mode()
    if how == "off":
        return None
    key = record_key(module_sha256, device, path)
    if how == "first":
        known = recalled(key)
        if known is not None:
            return known
    verdict = verify(problem, run)
    if how == "first":
        remember(key, verdict)
    return verdict


def device_identity(driver: str, gpu_name: str = "") -> str:
    """What a verdict on ``driver``'s device is recorded under: the driver and this host's CPU, or on a GPU its
    name (``gpu_name``) and the driver's version."""
    from .targets import DRIVER_BACKEND, host_cpu

    if DRIVER_BACKEND.get(driver) == "llvm-cpu":
        return f"{driver}|{host_cpu()}"
    return f"{driver}|{gpu_name}|{gpu_driver_version(driver)}"


class Gate:
    """``compiler.load_first``'s ``accept``: a candidate module of ``problem`` is taken only if it computes the known
    answer on ``device`` by ``path``. ``load(spec, module_path, data)`` loads a candidate and returns what serves
    calls, with a ``run(inputs) -> results`` for the check; the accepted one is kept in ``served``."""

    def __init__(self, problem, device: str, path: str, load: Callable):
        self.problem, self.device, self.path, self.load = problem, device, path, load
        self.refused: list[tuple[str, Verdict]] = []
        self.served = None

    def __call__(self, spec, module_path: Path, data: bytes) -> bool:
        served, run = self.load(spec, module_path, data)
        if run is None:  # served some other way, which checks it itself
            self.served = served
            return True
        verdict = ensure(self.problem, hashlib.sha256(data).hexdigest(), self.device, self.path, run)
        if verdict is not None and not verdict.passed:
            self.refused.append((module_path.name, verdict))
            return False
        self.served = served
        return True

    def refuse_all(self, hint: str | None):
        name, verdict = max(self.refused, key=lambda item: item[1].worst)
        raise WrongResultError(
            f"{self.problem.op}: no compiled form of {self.problem.name} computes the right answer on {self.device} "
            f"({len(self.refused)} refused by the known-answer check); worst: {name}: {verdict.describe()}"
            + (f"; {hint}" if hint else ""), self.problem, verdict.describe())


def check_again(problem, device: str, run: Callable[[list, tuple], Ran]) -> None:
    """``OPS_VERIFY=always``: the known-answer check before a call, nothing recalled or recorded; raises if wrong."""
    verdict = verify(problem, run)
    if not verdict.passed:
        raise WrongResultError(f"{problem.op}: {problem.name} computed a wrong known answer on {device} "
                               f"(OPS_VERIFY=always): {verdict.describe()}", problem, verdict.describe())


def gpu_driver_version(driver: str) -> str:
    """The GPU driver's version, read by the launcher of ``driver`` (``ops.launch.<driver>.driver_version``), where
    the library it uses is there (else empty: the name and the runtime's version still key the record)."""
    try:
        return importlib.import_module(f"ops.launch.{driver}").driver_version()
    except Exception:
        return ""
