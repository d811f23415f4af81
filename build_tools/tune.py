"""A tuner for the convolution dispatches: generate IREE dispatch configurations, compile, time, record the winner.

    # here (the compiler): candidates for every phase convolution of a problem
    python -m build_tools.tune generate --problem conv_bwd_data/stride1_36 --target cuda:sm_80 --out .gpu/tune
    # on the GPU machine (runtime only): check and time every candidate, write results.json
    python -m build_tools.tune time --dir .gpu/tune --device cuda --out $OUT
    # here: keep the fastest correct candidate per problem in mlir/tuning/<target>.json
    python -m build_tools.tune record --results results.json

A candidate is either one ``#iree_codegen.compilation_info`` (TileAndFuse pipeline, implicit GEMM) set on one
phase's convolution (conv_bwd_data, grouped_conv_bwd_data), or one choice of the template's form (an operator
module's ``form_candidates``: e.g. the batch split of grouped_conv_bwd_weight). Tile sizes live in the
implicit-GEMM iteration space ``[n, *spatial, c, k]`` (grouped: ``[n, *spatial, g, c, k]``, one group a
workgroup): workgroup tiles in elements, subgroup tiles in intrinsic tiles along the innermost spatial dim (M) and
c (N), reduction in intrinsic tiles of k. The other phases keep their table entries (else IREE's defaults) while
one phase is tuned. A phase with single-tap axes is tuned without them (IREE folds them away, and the configuration
with them); one of single taps only is a matmul to IREE and is not tuned.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

from ops import catalog, compiler, dtypes, policy, runtime, targets, verify
from ops.render import conv_compilation_info
from ops.operators import phase_plan
from ops.problem import ConvBwdDataProblem

TUNING_DIR = Path(__file__).resolve().parent.parent / "mlir" / "tuning"


def candidate_space(intrinsic, limit: int, seed: int = 0, channel_tiles: tuple[int, ...] = (64, 128, 256)) -> list[tuple]:
    _, m, n, _, _ = intrinsic
    space = []
    for rows, inner, channels, sg_rows, sg_inner, sg_channels, k_tiles, stages in itertools.product(
        (1, 2, 4), (16, 32, 64), channel_tiles, (1, 2), (1, 2, 4), (2, 4, 8), (2, 4, 8), (2, 3, 4)
    ):
        if rows % sg_rows or inner % (sg_inner * m) or channels % (sg_channels * n):
            continue
        warps = (rows // sg_rows) * (inner // (sg_inner * m)) * (channels // (sg_channels * n))
        if warps not in (2, 4, 8):
            continue
        space.append(((rows, inner, channels), (sg_rows, sg_inner, sg_channels), k_tiles, stages))
    random.Random(seed).shuffle(space)
    # first, the hand-set configuration that reached 85 TFLOP/s on an H100 for the stride-1 problem
    known_good = ((4, 32, 128), (2, 2, 8), 4, 3)
    if known_good in space:
        space.remove(known_good)
        space.insert(0, known_good)
    return space[:limit]


def generate(problem_ref: str, target_name: str, out: Path, limit: int, jobs: int, suite: str = "ck_examples",
             only_phases: list[int] | None = None) -> int:
    op, name = problem_ref.split("/")
    module = catalog.OPERATORS[op]
    problem = catalog.problem(op, name, suite)
    target = targets.parse_target(target_name)
    element = dtypes.mlir_element_type(problem.dtype)
    intrinsic = targets.mma_intrinsic(target, element)
    version = compiler.installed_compiler_version()
    # per phase, the tap axes its tuned convolution iterates (the plan's; 0: the phase takes no configuration)
    tap_axes = phase_plan.tuned_tap_axes(problem) if isinstance(problem, ConvBwdDataProblem) else [problem.rank]
    grouped = problem.groups > 1
    # a group's channels are cut in tiles that divide them (a warp's share is a power of two of 8-wide tiles)
    channel_tiles = tuple(t for t in (32, 64, 128, 256) if problem.in_channels % t == 0) if grouped else (64, 128, 256)
    candidates = [{"id": "default", "phase": None, "config": None}]
    for form in getattr(module, "form_candidates", lambda _: [])(problem):
        keys = dataclasses.asdict(form)
        label = "-".join(f"{key}{value}" for key, value in keys.items())
        candidates.append({"id": f"form-{label}", "phase": None, "config": None, "render": keys})
    for phase, axes in enumerate(tap_axes):
        if (only_phases is not None and phase not in only_phases) or axes == 0:
            continue
        for i, (wg, sg, k_tiles, stages) in enumerate(candidate_space(intrinsic, limit, channel_tiles=channel_tiles)):
            candidates.append({
                "id": f"p{phase}-c{i}", "phase": phase, "workgroup": wg, "subgroup": sg, "k_tiles": k_tiles, "stages": stages,
                "config": conv_compilation_info(problem.rank, intrinsic, wg, sg, k_tiles, stages, axes, grouped),
            })
    from concurrent.futures import ThreadPoolExecutor

    def build(candidate):
        configs = {candidate["phase"]: candidate["config"]} if candidate["config"] else None
        # as the runtime does: the first of the forms (and fallback flags) that compiles
        error = None
        for spec in policy.module_specs(problem, target, configs=configs, options=candidate.get("render")):
            path = spec.path(out / candidate["id"], version)
            try:
                if not path.is_file():
                    compiler.compile_module(spec, path)
                return {**candidate, "module": str(path.relative_to(out))}
            except compiler.CompileError as failure:
                error = error or failure
        return {**candidate, "error": str(error).splitlines()[-1][:300]}

    # a form identical to the default module (the default's own choice) is not timed twice
    default_key = policy.module_spec(problem, target).key(version)
    candidates = [c for c in candidates if c["id"] == "default" or not c.get("render") or
                  policy.module_spec(problem, target, options=c["render"]).key(version) != default_key]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        built = list(pool.map(build, candidates))
    ok = [c for c in built if "module" in c]
    print(f"{len(ok)} of {len(built)} candidates compiled for {problem.name} on {target}")
    (out / "candidates.json").write_text(json.dumps({"operator": op, "problem": name, "suite": suite, "target": str(target), "function": problem.name, "candidates": built}, indent=1))
    return 0


def time_candidates(directory: Path, device: str, out: Path, repeat: int) -> int:
    spec = json.loads((directory / "candidates.json").read_text())
    op, name = spec["operator"], spec["problem"]
    module = catalog.OPERATORS[op]
    problem = catalog.problem(op, name, spec.get("suite", "ck_examples"))
    rng = np.random.default_rng(0)
    host_inputs = module.random_inputs(problem, rng)
    inputs = [runtime.to_device(a, device) for a in host_inputs]
    expected = module.reference(problem, host_inputs)
    hal_device = runtime.get_device(device)
    instance = runtime.rt.VmInstance()
    results = []
    out.mkdir(parents=True, exist_ok=True)

    def save():
        (out / f"results-{name}.json").write_text(json.dumps({**spec, "candidates": results, "device": device}, indent=1))

    for candidate in spec["candidates"]:
        if "module" not in candidate:
            continue
        vm_module = runtime.rt.VmModule.mmap(instance, str(directory / candidate["module"]))
        context = runtime.rt.SystemContext(vm_modules=[vm_module], config=runtime.rt.Config(device=hal_device))
        function = context.modules.module[spec["function"]]
        (_, result_dtype), = module.results(problem)
        out_array = runtime.to_device(np.full(expected.shape, np.nan, dtypes.numpy_dtype(result_dtype)), device)
        try:
            function(*inputs, out_array)
            error = verify.relative_error(out_array.to_host(), expected)
        except Exception as failure:  # a candidate that fails at run time is recorded, not fatal
            results.append({**candidate, "error": str(failure)[:300]})
            continue
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            function(*inputs, out_array)
            times.append(time.perf_counter() - start)
        seconds = float(np.median(times))
        results.append({**candidate, "seconds": seconds, "tflops": problem.flops / seconds / 1e12, "error_rel": error,
                        "ok": error <= verify.tolerance(op, problem.dtype)})
        print(f"{candidate['id']:>10}: {seconds * 1e3:8.3f} ms {problem.flops / seconds / 1e12:7.1f} TFLOP/s err {error:.1e}", flush=True)
        save()  # after every candidate: a run cut short by a time limit keeps what it measured
    save()
    return 0


def record(results_path: Path, device_name: str | None = None, min_gain: float = 0.03) -> int:
    """Keep, per phase, the fastest correct candidate that beats IREE's default by ``min_gain``, in mlir/tuning/."""
    results = json.loads(results_path.read_text())
    timed = [c for c in results["candidates"] if c.get("ok")]
    default = next((c for c in timed if c["id"] == "default"), None)
    if default is None:
        print("no correct default measurement: nothing recorded")
        return 1
    target = targets.parse_target(results["target"])
    path = TUNING_DIR / f"{target.directory_name}.json"
    table = json.loads(path.read_text()) if path.is_file() else {"target": str(target), "entries": []}
    phases = sorted({c["phase"] for c in timed if c["phase"] is not None})
    recorded = 0
    forms = [c for c in timed if c.get("render")]
    if forms:
        best = min(forms, key=lambda c: c["seconds"])
        if best["seconds"] <= default["seconds"] * (1 - min_gain):
            for entry in table["entries"]:  # a newer choice replaces the older one for the same keys
                if entry["function"] == results["function"] and "render" in entry:
                    entry["render"] = {k: v for k, v in entry["render"].items() if k not in best["render"]}
            table["entries"] = [  # an entry left with no choice at all goes
                e for e in table["entries"] if e.get("render") or "compilation_info" in e or e.get("flags")
            ]
            table["entries"].append({
                "function": results["function"], "render": best["render"],
                "source": f"build_tools/tune.py on {device_name or results['device']}: {best['seconds'] * 1e3:.3f} ms "
                          f"against the default form's {default['seconds'] * 1e3:.3f} ms; "
                          + ", ".join(f"{c['id']} {c['seconds'] * 1e3:.3f} ms" for c in sorted(forms, key=lambda c: c["seconds"])),
            })
            recorded += 1
            print(f"form: {best['id']} {best['seconds'] * 1e3:.3f} ms vs default {default['seconds'] * 1e3:.3f} ms: recorded")
        else:
            print(f"form: none beats the default ({default['seconds'] * 1e3:.3f} ms) by {min_gain:.0%}")
    for phase in phases:
        best = min((c for c in timed if c["phase"] == phase), key=lambda c: c["seconds"])
        if best["seconds"] > default["seconds"] * (1 - min_gain):
            print(f"phase {phase}: no candidate beats the default ({default['seconds'] * 1e3:.3f} ms) by {min_gain:.0%}")
            continue
        table["entries"] = [e for e in table["entries"] if not (e["function"] == results["function"] and e.get("phase") == phase)]
        table["entries"].append({
            "function": results["function"], "phase": phase, "compilation_info": best["config"],
            "source": f"build_tools/tune.py on {device_name or results['device']}: {best['seconds'] * 1e3:.3f} ms "
                      f"({best['tflops']:.1f} TFLOP/s) against IREE's default {default['seconds'] * 1e3:.3f} ms, "
                      f"{len(timed)} candidates timed",
        })
        recorded += 1
        print(f"phase {phase}: {best['id']} {best['seconds'] * 1e3:.3f} ms vs default {default['seconds'] * 1e3:.3f} ms: recorded")
    path.write_text(json.dumps(table, indent=1) + "\n")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build_tools.tune", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate")
    gen.add_argument("--problem", required=True, help="operator/name from the manifests")
    gen.add_argument("--target", default="cuda:sm_80")
    gen.add_argument("--out", type=Path, required=True)
    gen.add_argument("--limit", type=int, default=24, help="candidates per phase")
    gen.add_argument("--jobs", type=int, default=2)
    gen.add_argument("--suite", default="ck_examples")
    gen.add_argument("--phases", type=lambda text: [int(p) for p in text.split(",")], default=None,
                     help="tune only these phase convolutions (comma-separated indices; default: all)")
    rec = commands.add_parser("record")
    rec.add_argument("--results", type=Path, required=True)
    rec.add_argument("--device-name", default=None, help="the GPU the results were timed on, for the record")
    rec.add_argument("--min-gain", type=float, default=0.03,
                     help="record a phase's best only if it beats the default module's time by this fraction")
    tim = commands.add_parser("time")
    tim.add_argument("--dir", type=Path, required=True)
    tim.add_argument("--device", default="cuda")
    tim.add_argument("--out", type=Path, required=True)
    tim.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    if args.command == "generate":
        return generate(args.problem, args.target, args.out, args.limit, args.jobs, args.suite, args.phases)
    if args.command == "record":
        return record(args.results, args.device_name, args.min_gain)
    return time_candidates(args.dir, args.device, args.out, args.repeat)


if __name__ == "__main__":
    sys.exit(main())
