"""A CPU module's launch plan on PyTorch's own OpenMP threads: its dispatch functions called directly.

IREE's runtime runs a CPU module on its own worker threads, beside PyTorch's OpenMP pool on the same cores: each
call hands the work over and waits, and PyTorch's pool has to be released first and made again after
(``ops/torch/calls.py``). Here the module's executables are loaded into the process (``elf.load``) and a small
native runner executes the plan's commands in one parallel region of the OpenMP runtime PyTorch has loaded
(``GOMP_parallel``, which libgomp and LLVM's libomp both export): each dispatch's workgroups split evenly over the
team, fills and copies split by bytes, a team barrier after every command (IREE's barriers, kept). The calling
thread takes part; nothing is handed over, released or waited for beyond the region's end.

The runner is C, compiled on first use with the host's C compiler (``$CC``, else ``cc``) into the module store
(its ``launch`` folder, ``ops.compiler.write_dir()``'s where the cache cannot be written): where there is none,
or no OpenMP runtime is loaded, ``load`` says why and the module runs through IREE's runtime. A module it serves
is checked on its first use like any other (``ops.known_answer``, as ``cpu-launch``).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import mmap
import os
import shutil
import subprocess
import threading

from . import elf
from . import plan as launch_plan
from .store import plan_of

RUNNER_SOURCE = r"""
#include <stdint.h>
#include <string.h>
typedef struct { uint32_t wsx, wsy; uint16_t wsz, constant_count; uint32_t wcx, wcy; uint16_t wcz; uint8_t concurrency,
                 binding_count; const uint32_t* constants; void* const* bindings; const size_t* lengths; } state_t;
typedef struct { uint32_t x, y; uint16_t z, reserved; uint32_t processor; void* local; uint32_t local_size; } group_t;
typedef int (*dispatch_t)(const void*, const state_t*, const group_t*);
typedef struct { uint32_t kind, local_size; dispatch_t function; state_t state; char* target; const char* source;
                 uint64_t length; uint32_t pattern, pattern_bytes;
                 /* where the call's pointers go: a dispatch's binding i at bases[slots[i]] + offsets[i]; a fill's
                    or copy's target (and source) at bases[target_slot] + target_offset (source_slot < 0: none) */
                 const uint32_t* slots; const uint64_t* offsets; void** pointers;
                 int32_t target_slot, source_slot; uint64_t target_offset, source_offset; } command_t;
typedef struct { void (*parallel)(void (*)(void*), void*, unsigned, unsigned); void (*barrier)(void);
                 int (*thread)(void); int (*threads)(void); const void* environment; command_t* commands;
                 int count; char* local; uint64_t local_stride; volatile int failed; } run_t;

static void dispatch(run_t* run, const command_t* c, uint64_t t, uint64_t n) {
  const state_t* s = &c->state;
  uint64_t total = (uint64_t)s->wcx * s->wcy * s->wcz, end = total * (t + 1) / n;
  group_t g;
  memset(&g, 0, sizeof g);
  g.processor = (uint32_t)t;
  g.local = c->local_size ? run->local + t * run->local_stride : 0;
  g.local_size = c->local_size;
  for (uint64_t i = total * t / n; i < end; ++i) {
    g.x = (uint32_t)(i % s->wcx); g.y = (uint32_t)(i / s->wcx % s->wcy); g.z = (uint16_t)(i / ((uint64_t)s->wcx * s->wcy));
    if (c->function(run->environment, s, &g)) run->failed = 1;
  }
}

/* a fill of IREE's 1-, 2- or 4-byte pattern: memset where its bytes are all one, else stores of a constant size
   (which the compiler vectorizes; a memcpy call per element ran at a fraction of memory speed) */
static void fill(char* target, uint64_t bytes, uint32_t pattern, uint64_t unit) {
  const unsigned char* p = (const unsigned char*)&pattern;
  int same = 1;
  for (uint64_t b = 1; b < unit; ++b) same &= p[b] == p[0];
  if (same) { memset(target, p[0], bytes); return; }
  if (unit == 2) {
    uint16_t v;
    memcpy(&v, p, 2);
    for (uint64_t i = 0; i < bytes; i += 2) memcpy(target + i, &v, 2);
    return;
  }
  for (uint64_t i = 0; i < bytes; i += 4) memcpy(target + i, &pattern, 4);
}

static void fill_or_copy(const command_t* c, uint64_t t, uint64_t n) {
  uint64_t unit = c->pattern_bytes ? c->pattern_bytes : 1, units = c->length / unit;
  uint64_t begin = units * t / n * unit, end = units * (t + 1) / n * unit;
  if (c->kind == 2) { memcpy(c->target + begin, c->source + begin, end - begin); return; }
  fill(c->target + begin, end - begin, c->pattern, unit);
}

static void team(void* data) {
  run_t* run = (run_t*)data;
  uint64_t t = (uint64_t)run->thread(), n = (uint64_t)run->threads();
  for (int i = 0; i < run->count; ++i) {
    if (run->commands[i].kind == 0) dispatch(run, &run->commands[i], t, n);
    else fill_or_copy(&run->commands[i], t, n);
    if (i + 1 < run->count) run->barrier();
  }
}

static void place(run_t* run, const uint64_t* bases, unsigned threads) {
  for (int i = 0; i < run->count; ++i) {
    command_t* c = &run->commands[i];
    if (c->kind == 0) {
      for (uint32_t b = 0; b < c->state.binding_count; ++b) c->pointers[b] = (void*)(bases[c->slots[b]] + c->offsets[b]);
      c->state.concurrency = (uint8_t)threads;
    } else {
      c->target = (char*)(bases[c->target_slot] + c->target_offset);
      c->source = c->source_slot < 0 ? 0 : (const char*)(bases[c->source_slot] + c->source_offset);
    }
  }
}

int ops_run_plan(run_t* run, unsigned threads, const uint64_t* bases) {
  place(run, bases, threads);
  run->failed = 0;
  run->parallel(team, run, threads, 0);
  return run->failed;
}

/* two plans in one parallel region, the second after the first (a barrier between): one team for both */
typedef struct { run_t* first; run_t* second; } pair_t;

static void team_pair(void* data) {
  pair_t* pair = (pair_t*)data;
  team(pair->first);
  pair->first->barrier();
  team(pair->second);
}

int ops_run_pair(run_t* first, const uint64_t* first_bases, run_t* second, const uint64_t* second_bases,
                 unsigned threads) {
  pair_t pair = {first, second};
  place(first, first_bases, threads);
  place(second, second_bases, threads);
  first->failed = second->failed = 0;
  first->parallel(team_pair, &pair, threads, 0);
  return first->failed | second->failed;
}
"""

_DISPATCH, _FILL, _COPY = 0, 1, 2
_MAX_THREADS = 64  # a call's team (PyTorch's thread count) at most; the local memory is kept for this many


class _State(ctypes.Structure):
    _fields_ = [("wsx", ctypes.c_uint32), ("wsy", ctypes.c_uint32), ("wsz", ctypes.c_uint16),
                ("constant_count", ctypes.c_uint16), ("wcx", ctypes.c_uint32), ("wcy", ctypes.c_uint32),
                ("wcz", ctypes.c_uint16), ("concurrency", ctypes.c_uint8), ("binding_count", ctypes.c_uint8),
                ("constants", ctypes.c_void_p), ("bindings", ctypes.c_void_p), ("lengths", ctypes.c_void_p)]


class _Command(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32), ("local_size", ctypes.c_uint32), ("function", ctypes.c_void_p),
                ("state", _State), ("target", ctypes.c_void_p), ("source", ctypes.c_void_p), ("length", ctypes.c_uint64),
                ("pattern", ctypes.c_uint32), ("pattern_bytes", ctypes.c_uint32), ("slots", ctypes.c_void_p),
                ("offsets", ctypes.c_void_p), ("pointers", ctypes.c_void_p), ("target_slot", ctypes.c_int32),
                ("source_slot", ctypes.c_int32), ("target_offset", ctypes.c_uint64), ("source_offset", ctypes.c_uint64)]


class _Run(ctypes.Structure):
    _fields_ = [("parallel", ctypes.c_void_p), ("barrier", ctypes.c_void_p), ("thread", ctypes.c_void_p),
                ("threads", ctypes.c_void_p), ("environment", ctypes.c_void_p), ("commands", ctypes.c_void_p),
                ("count", ctypes.c_int), ("local", ctypes.c_void_p), ("local_stride", ctypes.c_uint64),
                ("failed", ctypes.c_int)]


class LaunchError(RuntimeError):
    """A dispatch function reported a failure."""


OPENMP_RUNTIMES = ("libgomp", "libiomp5", "libomp")  # GNU's (PyTorch's Linux wheels), Intel's, LLVM's
_TEAM_FUNCTIONS = ("GOMP_parallel", "GOMP_barrier", "omp_get_thread_num", "omp_get_num_threads")


@functools.lru_cache(maxsize=None)
def loaded_openmp_runtimes() -> tuple[ctypes.CDLL, ...]:
    """The OpenMP runtimes this process has loaded (PyTorch's), by path; none where the process's maps cannot be
    read (not Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:
        return ()
    return tuple(ctypes.CDLL(path) for path in sorted(paths) if os.path.basename(path).startswith(OPENMP_RUNTIMES))


def openmp_runtime() -> ctypes.CDLL | None:
    """The loaded OpenMP runtime that can run a team (``GOMP_parallel``: libgomp, and LLVM's libomp), or None."""
    return next((library for library in loaded_openmp_runtimes()
                 if all(hasattr(library, name) for name in _TEAM_FUNCTIONS)), None)


_runner_lock = threading.Lock()


RUNNER_NAME = f"cpu-runner-{hashlib.sha256(RUNNER_SOURCE.encode()).hexdigest()[:16]}.so"


@functools.lru_cache(maxsize=None)
def _runner(directory: str) -> ctypes.CDLL | str:
    """The native runner, compiled once into ``directory``; or why it cannot be."""
    path = os.path.join(directory, RUNNER_NAME)
    with _runner_lock:
        if not os.path.isfile(path):
            compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
            if compiler is None:
                return "no C compiler (cc, or $CC) to build the CPU runner with"
            os.makedirs(directory, exist_ok=True)
            source, built = f"{path}.{os.getpid()}.c", f"{path}.{os.getpid()}.tmp"
            with open(source, "w") as f:
                f.write(RUNNER_SOURCE)
            try:
                result = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", built, source],
                                        capture_output=True, text=True)
                if result.returncode != 0:
                    return f"{compiler} could not build the CPU runner: {result.stderr.strip()[:300]}"
                os.replace(built, path)
            finally:
                for leftover in (source, built):
                    if os.path.exists(leftover):
                        os.unlink(leftover)
    runner = ctypes.CDLL(path)
    runner.ops_run_plan.argtypes = [ctypes.POINTER(_Run), ctypes.c_uint, ctypes.POINTER(ctypes.c_uint64)]
    runner.ops_run_plan.restype = ctypes.c_int
    runner.ops_run_pair.argtypes = [ctypes.POINTER(_Run), ctypes.POINTER(ctypes.c_uint64)] * 2 + [ctypes.c_uint]
    runner.ops_run_pair.restype = ctypes.c_int
    return runner


def _address(library: ctypes.CDLL, name: str) -> int:
    return ctypes.cast(getattr(library, name), ctypes.c_void_p).value


class Kernels:
    """A plan's commands, ready to run on PyTorch's OpenMP threads: ``kernels(bases, threads)`` with slot ``i`` at
    host address ``bases[i]``."""

    def __init__(self, plan: launch_plan.Plan, containers: list[bytes], runner: ctypes.CDLL, openmp: ctypes.CDLL):
        self.plan, self._runner = plan, runner
        executables = [elf.load(container) for container in containers]
        self._commands = (_Command * len(plan.commands))()
        self._keep = [executables]  # what the commands point into
        local = 0
        for command, step in zip(self._commands, plan.commands):
            if isinstance(step, launch_plan.Dispatch):
                name = plan.executables[step.executable].exports[step.export].name
                local = max(local, self._dispatch(command, step, executables[step.executable].function(name)))
            elif isinstance(step, launch_plan.Fill):
                command.kind, command.length = _FILL, step.length
                command.pattern, command.pattern_bytes = step.pattern, step.pattern_bytes
                command.target_slot, command.target_offset, command.source_slot = step.slot, step.offset, -1
            else:
                command.kind, command.length = _COPY, step.length
                command.target_slot, command.target_offset = step.target, step.target_offset
                command.source_slot, command.source_offset = step.source, step.source_offset
        self._local = ctypes.create_string_buffer(max(64, local * _MAX_THREADS))  # each thread's local memory
        self._run = _Run(_address(openmp, "GOMP_parallel"), _address(openmp, "GOMP_barrier"),
                         _address(openmp, "omp_get_thread_num"), _address(openmp, "omp_get_num_threads"),
                         ctypes.addressof(elf.ENVIRONMENT), ctypes.addressof(self._commands), len(plan.commands),
                         ctypes.addressof(self._local), local, 0)
        self._run_ref = ctypes.byref(self._run)
        self._bases = (ctypes.c_uint64 * max(1, len(plan.slots)))()  # a call's slot addresses, read by the runner
        self._lock = threading.Lock()  # one call at a time: the pointers and the local memory are the kernels' own

    def _dispatch(self, command: _Command, step: launch_plan.Dispatch, function: elf.Function) -> int:
        """``command`` as a dispatch of ``function`` (whose bindings and constants the plan's extraction checked
        against this very executable, its digest verified on load)."""
        count = max(1, len(step.bindings))
        pointers = (ctypes.c_void_p * count)()  # the runner writes them from the call's slot addresses
        slots = (ctypes.c_uint32 * count)(*[slot for slot, _, _ in step.bindings])
        offsets = (ctypes.c_uint64 * count)(*[offset for _, offset, _ in step.bindings])
        lengths = (ctypes.c_size_t * count)(*[length for _, _, length in step.bindings])
        constants = (ctypes.c_uint32 * max(1, len(step.constants)))(*step.constants)
        self._keep += [pointers, slots, offsets, lengths, constants]
        state = command.state
        state.wsx, state.wsy, state.wsz = function.workgroup_size
        state.constant_count, state.binding_count = len(step.constants), len(step.bindings)
        state.wcx, state.wcy, state.wcz = step.grid
        state.constants, state.bindings, state.lengths = (ctypes.addressof(a) for a in (constants, pointers, lengths))
        command.slots, command.offsets, command.pointers = (ctypes.addressof(a) for a in (slots, offsets, pointers))
        command.kind, command.function, command.local_size = _DISPATCH, function.address, function.local_memory_bytes
        return function.local_memory_bytes

    def __call__(self, bases: list[int], threads: int) -> None:
        threads = max(1, min(threads, _MAX_THREADS))
        with self._lock:
            self._bases[:len(bases)] = bases
            failed = self._runner.ops_run_plan(self._run_ref, threads, self._bases)
        if failed:
            raise LaunchError(f"a dispatch of {self.plan.function} reported a failure")

    def then(self, second: "Kernels", bases: list[int], second_bases: list[int], threads: int) -> None:
        """These kernels, then ``second``'s, in one parallel region (one team, a barrier between): what two calls
        would do, for one fork and join of PyTorch's pool and one trip through the runner."""
        if second is self:  # one plan's pointers and local memory serve one run at a time
            raise ValueError("ops.launch.cpu: a plan cannot run after itself in one region")
        threads = max(1, min(threads, _MAX_THREADS))
        first_lock, second_lock = sorted((self._lock, second._lock), key=id)  # one order: no deadlock
        with first_lock, second_lock:
            self._bases[:len(bases)] = bases
            second._bases[:len(second_bases)] = second_bases
            failed = self._runner.ops_run_pair(self._run_ref, self._bases, second._run_ref, second._bases, threads)
        if failed:
            raise LaunchError(f"a dispatch of {self.plan.function} or {second.plan.function} reported a failure")


HUGE_PAGE = 2 << 20  # x86-64's and arm64's transparent huge page


class Workspace:
    """``size`` bytes of host memory for launched kernels' transients: with ``huge_pages``, an anonymous mapping
    whose start is aligned to a huge page and advised ``MADV_HUGEPAGE`` (where Python's ``mmap`` has it: Linux), so
    that the kernel backs it with 2 MB pages where transparent huge pages are on; else a plain anonymous mapping.
    Either is page-aligned (IREE's code assumes 64 bytes) and zero-filled; ``address`` is its first byte's."""

    def __init__(self, size: int, huge_pages: bool):
        size = max(size, 64)
        advise = getattr(mmap, "MADV_HUGEPAGE", None) if huge_pages else None
        slack = HUGE_PAGE if advise is not None else 0
        self._map = mmap.mmap(-1, size + slack, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        start = ctypes.addressof(ctypes.c_char.from_buffer(self._map))
        if advise is not None:
            try:
                self._map.madvise(advise)
            except OSError:  # transparent huge pages unsupported here: plain pages
                pass
        self.address = -(-start // HUGE_PAGE) * HUGE_PAGE if slack else start
        self.size = size


def _launch_directory() -> str:
    """Where the runner is: the module store's ``launch`` folder, where it is built unless the cache cannot be
    written (``compiler.write_dir``: then in this process's own folder, unless the cache already holds it)."""
    from .. import compiler  # ops.compiler imports this package's plan module

    cached = os.path.join(str(compiler.cache_dir()), "launch")
    if os.path.isfile(os.path.join(cached, RUNNER_NAME)):
        return cached
    return os.path.join(str(compiler.write_dir()), "launch")


def unavailable() -> str | None:
    """Why this process cannot launch CPU plans (no OpenMP runtime loaded, no runner), or None."""
    if openmp_runtime() is None:
        return "no OpenMP runtime (GOMP_parallel) is loaded in this process"
    runner = _runner(_launch_directory())
    return runner if isinstance(runner, str) else None


def load(spec, path, data: bytes, device_index=None) -> "tuple[Kernels, launch_plan.Plan] | str":
    """The kernels of ``spec``'s stored module at ``path`` (its verified bytes ``data``) on this process's OpenMP
    threads, and their plan; or why the module has none (no plan, no OpenMP runtime, no runner). A module compiled
    before CPU plans were read, or whose plan is damaged, gets its plan first (``plan_of``). ``device_index``: none
    on the CPU (the launchers' one interface, ``ops.executor``)."""
    reason = unavailable()
    if reason is not None:
        return reason
    openmp, runner = openmp_runtime(), _runner(_launch_directory())
    planned = plan_of(spec, path, data)
    if isinstance(planned, str):
        return planned
    try:
        return Kernels(planned[0], planned[1], runner, openmp), planned[0]
    except elf.UnsupportedExecutable as error:
        return str(error)
