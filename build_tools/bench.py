"""Benchmark the operators against PyTorch and against the hardware's measured limits.

    python -m build_tools.bench --device cuda|hip|local-task --suite ck_examples|zoo [--ops conv_bwd_data]
                                [--repeat 50] [--flags "--iree-...,--iree-..."] [--out artifacts/bench] [--kernels]
                                [--gemm] [--form key=value] [--prepare] [--launcher runtime|torch]

For each problem: correctness against the float64 reference on the same run, then this project's time
(device-resident inputs, warm-up, median of --repeat calls, input sets rotated), achieved TFLOP/s and
GB/s, PyTorch's time for the same backward op when PyTorch is installed (cuDNN on NVIDIA, MIOpen on AMD,
oneDNN on the CPU), and the floor: FLOPs over measured matrix throughput and bytes over measured copy
bandwidth, both measured in this run. Writes ``<out>/<device>-<suite>.json`` (and a PNG when matplotlib
is present) and prints a table. ``--kernels`` (GPU, with PyTorch) also records each of our dispatches' device
time per call, read from CUPTI through ``torch.profiler`` (it sees every kernel of the process, IREE's too).
``--gemm`` times, beside each convolution, IREE's own batch_matmul of its implicit-GEMM shape, compiled for the
same target (the column "of IREE GEMM": that time over ours). ``--form`` times another template form of each
problem side by side. ``--prepare`` only compiles, with iree-base-compiler, every module such a run loads into
``$OPS_CACHE_DIR``, for a GPU machine that has only the runtime. ``--launcher torch`` (the CPU) times our kernel
as ``ops.torch`` runs it (``calls.kernel_for``: the CPU launcher on PyTorch's threads, on PyTorch tensors; the
first form whose module computes the known answer there) instead of IREE's runtime; the check and the table are
the same.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ops import arrays, catalog, compiler, dtypes, policy, registry, render, runtime, targets, verify
from ops.api import run

try:  # PyTorch is optional: it gives the vendor-library comparison and the hardware ceilings
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

TORCH_DTYPE = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}


def bytes_moved(inputs, result) -> int:
    """The fewest bytes the operator must move: every input read once, the result written once."""
    return sum(a.nbytes for a in inputs) + math.prod(result.shape) * np.dtype(result.dtype).itemsize


def _median_seconds(call, repeat: int, sync=lambda: None) -> float:
    call()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --- PyTorch's version of each backward op -------------------------------------------------------------


def _torch_tensor(array, device, channels_last_layout: bool):
    tensor = torch.from_numpy(np.ascontiguousarray(array).astype(np.float32)).to(device=device, dtype=getattr(torch, TORCH_DTYPE[str(array.dtype)]))
    # channels-last NumPy arrays become PyTorch's logical NC* order with channels-last strides
    return tensor.movedim(-1, 1) if channels_last_layout else tensor


def _convolution_backward(problem, grad_out, x, weight, output_mask):
    """PyTorch's convolution backward for ``problem`` (cuDNN on NVIDIA), computing the gradients ``output_mask`` asks for."""
    def call():
        return torch.ops.aten.convolution_backward(
            grad_out, x, weight, None, list(problem.stride), [lo for lo, _ in problem.padding], list(problem.dilation),
            False, [0] * problem.rank, problem.groups, output_mask,
        )

    return call


# each operator's PyTorch reference, by the decorator below (the forwards have none: PyTorch's own op is theirs)
TORCH_REFERENCES: dict = {}


def reference_of(op: str):
    """Registers the decorated function as operator ``op``'s PyTorch reference: (problem, host inputs, torch
    device) -> a call, or None where PyTorch has no such kernel."""
    def register(function):
        TORCH_REFERENCES[op] = function
        return function
    return register


@reference_of("conv_bwd_data")
def torch_conv_bwd_data(problem, inputs, device):
    if any(lo != hi for lo, hi in problem.padding):
        return None  # PyTorch convolutions take symmetric padding only
    grad_out, weight = (_torch_tensor(a, device, problem.channels_last) for a in inputs)
    logical_input = (problem.batch, problem.groups * problem.in_channels, *problem.input_spatial)
    x = torch.empty(logical_input, device=device, dtype=grad_out.dtype)
    if problem.channels_last:
        x = x.to(memory_format=torch.channels_last if problem.rank == 2 else torch.channels_last_3d) if problem.rank > 1 else x
    return _convolution_backward(problem, grad_out, x, weight, [True, False, False])


@reference_of("grouped_conv_bwd_data")
def torch_grouped_conv_bwd_data(problem, inputs, device):
    """cuDNN's backward-data, then the epilogue as PyTorch elementwise ops (PyTorch cannot fuse it into the convolution)."""
    call_conv = torch_conv_bwd_data(problem, inputs[:2], device)
    if call_conv is None:
        return None
    from ops import epilogue as epilogues

    ds = [_torch_tensor(d, device, False) for d in inputs[2:2 + len(problem.d_shapes)]]
    root = problem.epilogue.root if problem.epilogue else None
    params = registry.module(problem).param_values(problem, inputs)  # the values our module ran with

    def call():
        grad_in = call_conv()[0]
        if root is None:
            return grad_in
        acc = grad_in.movedim(1, -1) if problem.channels_last else grad_in
        return epilogues.evaluate(root, {"acc": acc, **{f"d{j}": d for j, d in enumerate(ds)}, **params}, xp=torch)

    return call


@reference_of("grouped_conv_bwd_weight")
def torch_grouped_conv_bwd_weight(problem, inputs, device):
    if any(lo != hi for lo, hi in problem.padding):
        return None
    x, grad_out = (_torch_tensor(a, device, problem.channels_last) for a in inputs)
    logical_weight = (problem.groups * problem.out_channels, problem.in_channels, *problem.filter_spatial)
    weight = torch.empty(logical_weight, device=device, dtype=x.dtype)
    return _convolution_backward(problem, grad_out, x, weight, [False, True, False])


@reference_of("maxpool2d_bwd")
def torch_maxpool2d_bwd(problem, inputs, device):
    if any(lo != hi for lo, hi in problem.padding) or problem.source != "indices":
        return None
    grad_out = _torch_tensor(inputs[0], device, problem.channels_last)
    indices = torch.from_numpy(np.ascontiguousarray(inputs[1]).astype(np.int64)).to(device)
    indices = indices.movedim(-1, 1) if problem.channels_last else indices
    x = torch.empty((problem.batch, problem.channels, *problem.input_spatial), device=device, dtype=grad_out.dtype)

    def call():
        return torch.ops.aten.max_pool2d_with_indices_backward(
            grad_out, x, list(problem.kernel_size), list(problem.stride), [lo for lo, _ in problem.padding],
            list(problem.dilation), problem.ceil_mode, indices,
        )

    return call


@reference_of("avgpool3d_bwd")
def torch_avgpool3d_bwd(problem, inputs, device):
    if any(lo != hi for lo, hi in problem.padding) or any(d != 1 for d in problem.dilation):
        return None  # PyTorch's average pooling has no dilation (CK's extension)
    grad_out = _torch_tensor(inputs[0], device, problem.channels_last)
    x = torch.empty((problem.batch, problem.channels, *problem.input_spatial), device=device, dtype=grad_out.dtype)
    relu_output = _torch_tensor(inputs[1], device, problem.channels_last) if problem.input_activation else None

    def call():
        grad_in = torch.ops.aten.avg_pool3d_backward(
            grad_out, x, list(problem.kernel_size), list(problem.stride), [lo for lo, _ in problem.padding],
            problem.ceil_mode, problem.count_include_pad, problem.divisor_override,
        )  # and the ReLU's backward after it, where the problem fuses it
        return grad_in if relu_output is None else torch.ops.aten.threshold_backward(grad_in, relu_output, 0)

    return call


# --- ceilings ------------------------------------------------------------------------------------------


def measure_ceilings(device: str, dtype: str) -> dict:
    """Copy bandwidth (bytes read + written per second) and matrix throughput, measured now."""
    if torch is not None:
        tdev = targets.target_for_device(device).torch_device
        sync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
        n = 1 << 28 if tdev == "cuda" else 1 << 25
        src = torch.empty(n, dtype=torch.uint8, device=tdev).random_(0, 255)
        dst = torch.empty_like(src)
        copy_s = _median_seconds(lambda: dst.copy_(src), 20, sync)
        size = 8192 if tdev == "cuda" else 1024
        tdtype = getattr(torch, TORCH_DTYPE[dtype])
        a = torch.randn(size, size, device=tdev).to(tdtype)
        b = torch.randn(size, size, device=tdev).to(tdtype)
        mm_s = _median_seconds(lambda: a @ b, 10, sync)
        source = f"torch {torch.__version__}"
    else:
        n, size = 1 << 25, 1024
        src = np.random.default_rng(0).integers(0, 255, n, dtype=np.uint8)
        dst = np.empty_like(src)
        copy_s = _median_seconds(lambda: np.copyto(dst, src), 10)
        a = np.random.default_rng(1).standard_normal((size, size), dtype=np.float32)
        mm_s = _median_seconds(lambda: a @ a, 5)
        source = "numpy (float32 matmul)"
    return {"copy_bytes_per_s": 2 * n / copy_s, "matmul_flops_per_s": 2 * size**3 / mm_s, "measured_with": source}


# --- the benchmark -------------------------------------------------------------------------------------


def gemm_shape(problem) -> tuple[int, int, int, int] | None:
    """(G, M, N, K) of a convolution's implicit GEMM per group, with the convolution's multiply-adds: backward-data
    M = N*O positions, N = C, K = K*F; backward-weight M = K, N = F*C, K = N*O (None: not a convolution)."""
    if not hasattr(problem, "filter_spatial"):
        return None
    positions, taps = problem.batch * math.prod(problem.output_spatial), math.prod(problem.filter_spatial)
    if problem.op == "grouped_conv_bwd_weight":
        return problem.groups, problem.out_channels, taps * problem.in_channels, positions
    return problem.groups, positions, problem.in_channels, problem.out_channels * taps


def gemm_spec(problem, device: str) -> compiler.ModuleSpec | None:
    """The module of IREE's own batch_matmul of the problem's implicit-GEMM shape (``mlir/gemm_ceiling.mlir``)."""
    shape = gemm_shape(problem)
    if shape is None:
        return None
    groups, m, n, k = shape
    name = f"gemm_ceiling_g{groups}_m{m}_n{n}_k{k}_{problem.dtype}"
    target = targets.target_for_device(device)
    mlir = render.render("gemm_ceiling", function=name, groups=groups, m=m, n=n, k=k,
                         element=dtypes.mlir_element_type(problem.dtype), transients=render.transients(target))
    return compiler.ModuleSpec(name, mlir, target)


def iree_gemm_seconds(problem, device: str, repeat: int, rng) -> float | None:
    """IREE's own batch_matmul of the problem's implicit-GEMM shape, timed like ours."""
    spec = gemm_spec(problem, device)
    if spec is None:
        return None
    groups, m, n, k = gemm_shape(problem)
    function = runtime.load_specs([spec], device)
    a = runtime.to_device(dtypes.random_normal(rng, (groups, m, k), problem.dtype), device)
    b = runtime.to_device(dtypes.random_normal(rng, (groups, k, n), problem.dtype), device)
    c = runtime.empty((groups, m, n), "float32", device)
    function(a, b, c)
    return _median_seconds(lambda: function(a, b, c), repeat)


def kernel_times(call, calls: int = 5) -> list[dict]:
    """Device time and launches per call of each GPU kernel ``call`` launches (after one call unprofiled), from CUPTI
    (torch.profiler), slowest first."""
    from torch.profiler import ProfilerActivity, profile

    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as trace:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    totals: dict[str, float] = {}
    launches: dict[str, int] = {}
    for event in trace.events():
        if event.device_type.name == "CUDA":
            totals[event.name] = totals.get(event.name, 0.0) + event.device_time / calls  # microseconds
            launches[event.name] = launches.get(event.name, 0) + 1
    return [{"kernel": k, "us": round(v, 2), "count": launches[k] / calls}
            for k, v in sorted(totals.items(), key=lambda kv: -kv[1])]


def bench_problem(op: str, name: str, problem, device: str, repeat: int, extra_flags: tuple, rng, ceilings,
                  kernels: bool = False, gemm: bool = False, form: dict | None = None, launcher: str = "runtime") -> dict:
    module = catalog.OPERATORS[op]
    host_sets = [module.random_inputs(problem, rng)]
    host_inputs = host_sets[0]
    set_bytes = sum(a.nbytes for a in host_inputs)
    while len(host_sets) < 3 and set_bytes * (len(host_sets) + 1) < (1 << 30):  # rotate sets that fit in cache
        host_sets.append(module.random_inputs(problem, rng))
    input_sets = [[runtime.to_device(a, device) for a in host_set] for host_set in host_sets]
    # the public call, once, for the result's shape and dtype; then poison it and check the timed path fills it
    result = run(problem, input_sets[0], device)
    if launcher == "torch":
        calls_of, result_of = _torch_launched(problem, host_sets, result)
    else:
        out = runtime.to_device(np.full(result.shape, np.nan, result.dtype), device)
        call = arrays.ready(problem, device, extra_flags, form or None)
        calls_of = [lambda arguments=arguments: call(arguments, [out]) for arguments in input_sets]
        result_of = out.to_host
    calls_of[0]()
    error = verify.relative_error(result_of(), module.reference(problem, host_inputs))
    ok = error <= verify.tolerance(op, problem.dtype)
    counter = iter(range(1 << 62))
    ours = _median_seconds(lambda: calls_of[next(counter) % len(calls_of)](), repeat)
    moved = bytes_moved(host_inputs, result)
    flops = getattr(problem, "flops", 0)
    row = {
        "operator": op, "problem": name, "function": problem.name, "dtype": problem.dtype, "device": device,
        "flags": list(extra_flags), "form": form or {}, "launcher": launcher, "error": error, "ok": ok, "seconds": ours,
        "tflops": flops / ours / 1e12, "gbytes_per_s": moved / ours / 1e9, "bytes": moved, "flops": flops,
        "floor_seconds": max(flops / ceilings["matmul_flops_per_s"], moved / ceilings["copy_bytes_per_s"]),
        "torch_seconds": None,
        "iree_gemm_seconds": iree_gemm_seconds(problem, device, repeat, rng) if gemm else None,
    }
    if kernels and torch is not None and targets.target_for_device(device).torch_device == "cuda":
        row["kernels"] = kernel_times(calls_of[0])
        for k in row["kernels"][:8]:
            print(f"    {k['us']:10.1f} us  {k['kernel'][-110:]}", flush=True)
    reference = TORCH_REFERENCES.get(op)
    if torch is not None and reference:
        tdev = targets.target_for_device(device).torch_device
        call = reference(problem, host_inputs, tdev)
        if call is not None:
            sync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
            try:
                row["torch_seconds"] = _median_seconds(call, repeat, sync)
            except (RuntimeError, NotImplementedError) as error:  # e.g. no float16 kernel on the CPU
                row["torch_note"] = str(error).splitlines()[0][:120]
    return row


def _torch_launched(problem, host_sets: list, result) -> tuple[list, Callable]:
    """``problem``'s kernel on the CPU as ``ops.torch`` runs it (``calls.kernel_for``), on PyTorch tensors of each
    input set, held as PyTorch holds them (a channels-last problem's as (N, C, *spatial) views): a call per set into
    one NaN-filled destination, and that destination's host copy in the problem's layout."""
    from ops.torch import calls, plans

    cpu, channels_last = torch.device("cpu"), problem.channels_last
    kernel = calls.kernel_for(problem, cpu)
    tensor_sets = [[calls.to_torch(a, cpu, channels_last) for a in host_set] for host_set in host_sets]
    out = calls.to_torch(np.full(result.shape, np.nan, result.dtype), cpu, channels_last)
    return ([lambda tensors=tensors: kernel(tensors, [out]) for tensors in tensor_sets],
            lambda: calls.to_numpy(plans.kernel_view(out, channels_last)))


def print_table(rows: list[dict]) -> None:
    header = ["problem", "dtype", "check", "ours ms", "TFLOP/s", "GB/s", "torch ms", "vs torch", "IREE GEMM ms",
              "of IREE GEMM", "floor ms", "of floor"]
    lines = [header]
    for r in rows:
        torch_ms = r["torch_seconds"] * 1e3 if r["torch_seconds"] else None
        lines.append([
            f"{r['operator']}/{r['problem']}", r["dtype"], f"{'ok' if r['ok'] else 'FAIL'} {r['error']:.1e}",
            f"{r['seconds'] * 1e3:.3f}", f"{r['tflops']:.2f}", f"{r['gbytes_per_s']:.0f}",
            f"{torch_ms:.3f}" if torch_ms else "-", f"{r['torch_seconds'] / r['seconds']:.2f}x" if torch_ms else "-",
            f"{r['iree_gemm_seconds'] * 1e3:.3f}" if r.get("iree_gemm_seconds") else "-",
            f"{r['iree_gemm_seconds'] / r['seconds']:.2f}x" if r.get("iree_gemm_seconds") else "-",
            f"{r['floor_seconds'] * 1e3:.3f}", f"{r['floor_seconds'] / r['seconds']:.0%}",
        ])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for i, line in enumerate(lines):
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    labels = [f"{r['problem']}\n{r['dtype']}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 1.2), 4))
    ax.bar(x - 0.2, [r["floor_seconds"] / r["seconds"] for r in rows], 0.4, label="ours / floor")
    ax.bar(x + 0.2, [(r["floor_seconds"] / r["torch_seconds"]) if r["torch_seconds"] else 0 for r in rows], 0.4, label="PyTorch / floor")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("fraction of the hardware floor")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build_tools.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="local-task")
    parser.add_argument("--suite", default="ck_examples")
    parser.add_argument("--ops", default=None, help="comma-separated operators (default: all in the suite)")
    parser.add_argument("--problems", default=None, help="comma-separated problem names (default: all)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--flags", default="", help="extra iree-compile flags, comma-separated (modules must be compiled with them)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="key=value", help="override a parameter of every problem (e.g. batch=8)")
    parser.add_argument("--out", type=Path, default=Path("artifacts/bench"))
    parser.add_argument("--kernels", action="store_true", help="also record each dispatch's device time (GPU, PyTorch's profiler)")
    parser.add_argument("--gemm", action="store_true", help="also time IREE's own batch_matmul of each convolution's implicit-GEMM shape")
    parser.add_argument("--form", action="append", default=[], metavar="key=value",
                        help="time this template form instead of the tuning tables' choice (e.g. store=strided)")
    parser.add_argument("--launcher", choices=("runtime", "torch"), default="runtime",
                        help="the CPU: time our kernel through IREE's runtime (default) or as ops.torch runs it (the launcher "
                             "on PyTorch's threads)")
    parser.add_argument("--prepare", action="store_true",
                        help="only compile (here, with iree-base-compiler) every module the run would load, ours and the "
                             "GEMM ceilings, into the cache ($OPS_CACHE_DIR): for a GPU machine without the compiler")
    args = parser.parse_args(argv)
    if args.launcher == "torch" and (torch is None or targets.target_for_device(args.device).gpu or args.flags or args.form):
        parser.error("--launcher torch times the CPU's kernels as ops.torch runs them: it needs PyTorch and a CPU device, "
                     "and takes the tuning tables' forms and flags (no --flags, no --form)")

    from ops.cli import parse_overrides

    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % (1 << 31))
    rng = np.random.default_rng(seed)
    extra_flags = tuple(f for f in args.flags.split(",") if f)
    overrides = parse_overrides(args.set)
    form = parse_overrides(args.form)
    selected = [
        (op, name, catalog.problem(op, name, args.suite, **overrides) if overrides else problem)
        for op, name, problem in catalog.problems(args.suite, args.ops.split(",") if args.ops else None)
        if args.problems is None or name in args.problems.split(",")
    ]
    if args.prepare:
        target = targets.target_for_device(args.device)
        for op, name, problem in selected:
            compiler.load_first(policy.module_specs(problem, target, extra_flags))
            if form:
                compiler.load_first(policy.module_specs(problem, target, extra_flags, options=form))
            ceiling = gemm_spec(problem, args.device) if args.gemm else None
            if ceiling is not None:
                compiler.find_or_compile(ceiling)
            print(f"prepared {op}/{name} for {target} in {compiler.cache_dir()}", flush=True)
        return 0
    print(f"seed {seed}; device {args.device}; {platform.node()}", flush=True)
    rows, ceilings_by_dtype = [], {}
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.device}-{args.suite}" + ("-" + "-".join(f.strip("-").split("=")[0] for f in extra_flags) if extra_flags else "") \
        + "".join(f"-{key}-{value}" for key, value in form.items()) + ("-torch-launcher" if args.launcher == "torch" else "")
    for op, name, problem in selected:
        if problem.dtype not in ceilings_by_dtype:
            ceilings_by_dtype[problem.dtype] = measure_ceilings(args.device, problem.dtype)
            print(f"ceilings ({problem.dtype}): {json.dumps(ceilings_by_dtype[problem.dtype])}", flush=True)
        print(f"... {op}/{name}", file=sys.stderr, flush=True)
        rows.append(bench_problem(op, name, problem, args.device, args.repeat, extra_flags, rng,
                                  ceilings_by_dtype[problem.dtype], args.kernels, args.gemm, form, args.launcher))
        # written after every problem, so a run cut short keeps what it measured
        (args.out / f"{stem}.json").write_text(json.dumps({"seed": seed, "device": args.device, "command": " ".join(sys.argv), "ceilings": ceilings_by_dtype, "rows": rows}, indent=1))
    plot(rows, args.out / f"{stem}.png")
    print_table(rows)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
