"""``python -m ops``: run a named problem with random inputs, verify it, time it.

    python -m ops list
    python -m ops run OPERATOR|all [--problem ck_default] [--device local-task] [--verify] [--repeat 3]
                      [--seed S] [key=value ...]
    python -m ops cache [--clear]

``key=value`` overrides a problem parameter: ints (``batch=8``), per-dim tuples (``input_spatial=35x35``),
``(low, high)`` padding pairs (``padding=1:0,0:1``) or words (``dtype=float32``, ``layout=NCHW``). Like CK's
examples' ``verify init time`` arguments: --verify checks against the float64 NumPy reference, and the
timing is the median of --repeat calls on device-resident inputs. ``cache`` shows where compiled modules and
known-answer verdicts are kept and how much they hold; ``--clear`` empties it.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import sys
import time

import numpy as np

from . import catalog, compiler, known_answer, runtime, targets, policy, verify
from .api import run


def _parse_value(text: str):
    if ":" in text:  # padding pairs: lo:hi,lo:hi
        return tuple(tuple(int(v) for v in pair.split(":")) for pair in text.split(","))
    for separator in ("x", ","):
        parts = text.split(separator)
        if len(parts) > 1 and all(p.strip().lstrip("-").isdigit() for p in parts):
            return tuple(int(p) for p in parts)
    if text.lstrip("-").isdigit():
        return int(text)
    return text


def parse_overrides(items: list[str]) -> dict:
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"error: parameter overrides look like key=value, but got {item!r}")
        overrides[key] = _parse_value(value)
    return overrides


def artifact_targets(op: str, problem) -> list[str]:
    """The targets for which artifacts/ holds a current module of ``problem``."""
    version = compiler.compiler_version()
    found = []
    for name in targets.KNOWN_TARGETS:
        spec = policy.module_spec(problem, targets.parse_target(name))
        if spec.path(compiler.artifacts_dir(), version).is_file():
            found.append(name)
    return found


def _progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr, flush=True)


def run_problem(op: str, name: str, *, device: str, verify_result: bool, repeat: int, seed: int, overrides: dict) -> dict:
    """Run one problem; returns the row of the results table."""
    module = catalog.OPERATORS[op]
    problem = catalog.problem(op, name, **overrides)
    rng = np.random.default_rng(seed)
    target = targets.target_for_device(device)
    _progress(f"{op}/{name}: {problem.name}")
    _progress(f"random inputs (seed {seed})")
    host_inputs = module.random_inputs(problem, rng)
    inputs = [runtime.to_device(a, device) for a in host_inputs]
    compiles_before = compiler.stats["compiles"]
    _progress(f"first call on {device} (renders and compiles for {target} unless a module is cached)")
    start = time.perf_counter()
    result = run(problem, inputs, device)
    first_call = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run(problem, inputs, device, out=result)
        times.append(time.perf_counter() - start)
    median = statistics.median(times) if times else first_call
    moved = sum(a.nbytes for a in host_inputs) + int(np.prod(result.shape)) * np.dtype(result.dtype).itemsize
    row = {
        "operator": op,
        "problem": name,
        "dtype": problem.dtype,
        "device": device,
        "compiled": compiler.stats["compiles"] > compiles_before,
        "first_call_s": first_call,
        "median_s": median,
        "tflops": problem.flops / median / 1e12 if hasattr(problem, "flops") else None,
        "gbytes_per_s": moved / median / 1e9,
        "error": None,
        "ok": True,
    }
    if verify_result:
        _progress("float64 NumPy reference")
        expected = module.reference(problem, host_inputs)
        error = verify.relative_error(result.to_host(), expected)
        row["error"] = error
        row["ok"] = error <= verify.tolerance(op, problem.dtype)
    return row


def print_table(rows: list[dict]) -> None:
    header = ["operator", "problem", "dtype", "device", "first call", "median", "GFLOP/s", "GB/s", "rel. error", "check"]
    lines = [header]
    for r in rows:
        lines.append([
            r["operator"], r["problem"], r["dtype"], r["device"],
            f"{r['first_call_s']:.3f} s" + (" (compiled)" if r["compiled"] else ""),
            f"{r['median_s'] * 1e3:.2f} ms",
            f"{r['tflops'] * 1e3:.1f}" if r["tflops"] is not None else "-",
            f"{r['gbytes_per_s']:.1f}",
            f"{r['error']:.2e}" if r["error"] is not None else "-",
            ("PASS" if r["ok"] else "FAIL") if r["error"] is not None else "not verified",
        ])
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    for i, line in enumerate(lines):
        print("  ".join(str(cell).ljust(w) for cell, w in zip(line, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ops", description=__doc__.replace("``", ""),  # reST's quotes
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the known operators and problems")
    run = commands.add_parser(
        "run", help="run one problem with random inputs", formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="python -m ops run OPERATOR|all [options] [key=value ...]",
        epilog="key=value overrides a parameter of the problem: ints (batch=8), per-dim tuples (input_spatial=35x35),\n"
               "(low, high) padding pairs (padding=1:0,0:1) or words (dtype=float32, layout=NCHW).\n"
               "python -m ops list shows the problems; an unknown key is named with the operator's valid ones.")
    run.add_argument("operator", choices=[*catalog.OPERATORS, "all"], help="an operator, or all: each one's CK default problem, with the overrides")
    run.add_argument("--problem", default=None, help="problem name (default: the CK example's default)")
    run.add_argument("--device", default=targets.DEFAULT_DEVICE, help="IREE driver: local-task, hip, cuda")
    run.add_argument("--verify", action="store_true", help="check against the float64 NumPy reference")
    run.add_argument("--repeat", type=int, default=3, help="timed calls after the first (default 3)")
    run.add_argument("--seed", type=int, default=None, help="input seed (default: a fresh one, printed)")
    cache = commands.add_parser("cache", help="where compiled modules are kept, and how much they hold")
    cache.add_argument("--clear", action="store_true", help="delete the cache's contents")
    return parser


def _list() -> int:
    rows = [["operator", "problem", "suite", "artifacts for", "module function"]]
    for suite in catalog.suites():
        for op, name, problem in catalog.problems(suite):
            rows.append([op, name, suite, ", ".join(artifact_targets(op, problem)) or "-", problem.name])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)  # overrides may come between the options
    unknown = [item for item in extra if "=" not in item or item.startswith("-")]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "list":
        return _list()
    if args.command == "cache":
        return _cache(args.clear)
    if args.operator == "all" and args.problem:
        parser.error("run all takes no --problem: it runs each operator's CK default problem (key=value overrides "
                     "apply to each)")
    return _run(args, extra)


def entry() -> int:
    """``main`` for ``python -m ops``: output cut short by its reader (``python -m ops list | head``) ends the
    command quietly, with status 1 (Python's recipe: what is still to be written goes to the null device, where
    the interpreter's last flush does not fail again)."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status


def _run(args, extra: list[str]) -> int:
    operators = list(catalog.OPERATORS) if args.operator == "all" else [args.operator]
    seed = args.seed if args.seed is not None else int(os.environ.get("OPS_SEED", secrets.randbits(31)))
    rows = []
    try:
        targets.target_for_device(args.device)
        runtime.get_device(args.device)  # before any work: a missing device is one line, not a traceback
    except (ValueError, RuntimeError) as error:
        print(f"error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    try:
        for step, op in enumerate(operators, 1):
            name = args.problem or catalog.problem_names(op)[0]
            if len(operators) > 1:
                _progress(f"[{step}/{len(operators)}] {op}")
            rows.append(run_problem(op, name, device=args.device, verify_result=args.verify, repeat=args.repeat,
                                    seed=seed, overrides=parse_overrides(extra)))
    except (ValueError, TypeError, compiler.MissingModuleError, compiler.DamagedModuleError, compiler.CompileError,
            known_answer.WrongResultError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"seed {seed}")
    print_table(rows)
    return 0 if all(row["ok"] for row in rows) else 1


def _cache(clear: bool) -> int:
    root = compiler.cache_dir()
    files = [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []
    size = sum(p.stat().st_size for p in files)
    print(f"cache: {root} ({len(files)} files, {size / 2 ** 20:.1f} MiB; $OPS_CACHE_DIR moves it)")
    if clear and files:
        try:
            for child in root.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        except OSError as error:  # a read-only or another user's cache: one line, not a traceback
            print(f"error: cannot clear {root}: {error.strerror or error} ({error.filename}); clear it as its owner, "
                  "or set OPS_CACHE_DIR to a folder of your own", file=sys.stderr)
            return 2
        print(f"cleared {root}")
    return 0
