"""Compile problem manifests ahead of time into ``artifacts/<target>/`` and record them in ``artifacts/manifest.json``.

    python -m build_tools.aot [--suite ck_examples] [--targets rocm:gfx942,cuda:sm_80] [--out artifacts] [--jobs N]
                              [--flags "--iree-...,--iree-..."]   (extra flags: modules for bench --flags experiments)

Modules land where the runtime looks for them (``ops.compiler.ModuleSpec.path``), so a machine with only
``iree-base-runtime`` runs every problem compiled here. Each module's SHA-256 is recorded in the manifest and
beside the module, and the runtime loads only bytes that match it. Of a problem's forms (ops.policy.module_specs)
the first that compiles is kept, as at run time; one already present under its key, with its digest, is not
compiled again. A problem none of whose forms compiles is reported with the compiler's messages; the others
still finish, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from ops import catalog, compiler, targets, policy
from ops.launch import store as plan_store

DEFAULT_TARGETS = "rocm:gfx942"


def module_specs(op: str, problem, target: targets.Target, extra_flags: tuple[str, ...] = ()) -> list[compiler.ModuleSpec]:
    return policy.module_specs(problem, target, extra_flags)


def _compile_one(op: str, name: str, problem, target: targets.Target, out: Path, version: str,
                 extra_flags: tuple[str, ...] = ()) -> dict:
    """The first of the problem's forms that is up to date or compiles (as the runtime chooses, see
    ops.compiler.load_first), as a manifest record with its status."""
    specs = module_specs(op, problem, target, extra_flags)

    def record(form: int, spec: compiler.ModuleSpec, vmfb: Path) -> dict:
        return {
            "operator": op, "problem": name, "function": problem.name, "dtype": problem.dtype,
            "params": dataclasses.asdict(problem),
            "target": str(target), "flags": spec.flags, "compiler_version": version, "key": spec.key(version),
            "module": str(vmfb.relative_to(out)), "form": form,
        }

    for form, spec in enumerate(specs):
        vmfb = spec.path(out, version)
        data = compiler.verified(out, vmfb)
        if data is not None:
            return {**record(form, spec, vmfb), "status": "up to date", "sha256": compiler.digest(data)}
    errors = []
    for form, spec in enumerate(specs):
        vmfb = spec.path(out, version)
        start = time.perf_counter()
        try:
            dispatches, plan = _compile(spec, vmfb)
        except compiler.CompileError as error:
            errors.append(str(error))
            continue
        return {**record(form, spec, vmfb), "status": "compiled", "compile_seconds": round(time.perf_counter() - start, 2),
                "dispatches": dispatches, "sha256": compiler.digest(vmfb.read_bytes()), **plan}
    return {**record(0, specs[0], specs[0].path(out, version)), "status": "failed", "error": "\n\n".join(errors)}


def _compile(spec: compiler.ModuleSpec, vmfb: Path) -> tuple[int, dict]:
    """Compile ``spec`` to ``vmfb``: its dispatch count, and for GPU targets its launch plan's manifest record
    (the plan's path and digest; or why there is none). A GPU module's dispatches are its plan's: dump flags
    would change its bytes, and the plan is read from the very program the module is compiled from."""
    if not spec.target.gpu:
        dump = Path(tempfile.mkdtemp(prefix="ops-aot-"))
        try:
            compiler.compile_module(spec, vmfb, dump_dir=dump)
            return len(list(dump.glob("configured_*.mlir"))), {}
        finally:
            shutil.rmtree(dump, ignore_errors=True)
    compiler.compile_module(spec, vmfb)
    root = vmfb.parents[1]
    plan = plan_store.load(root, vmfb, vmfb.read_bytes())
    if isinstance(plan, str):
        return None, {"launch_plan_unsupported": plan}
    path = plan_store.plan_path(vmfb)
    return len(plan.dispatches), {"launch_plan": str(path.relative_to(root)),
                                  "launch_plan_sha256": compiler.digest(path.read_bytes())}


def build(suites: list[str], target_names: list[str], out: Path, jobs: int, ops: list[str] | None = None,
          extra_flags: tuple[str, ...] = ()) -> int:
    version = compiler.installed_compiler_version()
    if version is None:
        print("error: iree-base-compiler is not installed", file=sys.stderr)
        return 2
    work = [
        (op, name, problem, targets.parse_target(t))
        for suite in suites
        for op, name, problem in catalog.problems(suite, ops)
        for t in target_names
    ]
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    if manifest.get("compiler_version") not in (None, version):
        manifest = {}  # modules of another compiler no longer match any key
    modules = {m["key"]: m for m in manifest.get("modules", [])}
    failed = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_compile_one, op, name, problem, target, out, version, extra_flags) for op, name, problem, target in work]
        for done, future in enumerate(as_completed(futures), 1):
            record = future.result()
            seconds = f" ({record['compile_seconds']} s, {record['dispatches']} dispatches)" if "compile_seconds" in record else ""
            print(f"[{done:>3}/{len(work)}] {record['status']:<10} {record['target']:<12} {record['operator']}/{record['problem']}{seconds}", flush=True)
            if record["status"] == "failed":
                failed += 1
                print(record.pop("error"), file=sys.stderr)
                continue
            previous = modules.get(record["key"], {})
            modules[record["key"]] = {**previous, **{k: v for k, v in record.items() if k != "status"}}
    manifest = {"compiler_version": version, "modules": sorted(modules.values(), key=lambda m: (m["target"], m["function"]))}
    out.mkdir(parents=True, exist_ok=True)
    compiler.atomic_write(manifest_path, (json.dumps(manifest, indent=1) + "\n").encode())
    compiled = sum(1 for _ in out.glob("*/*.vmfb"))
    print(f"{len(work) - failed} of {len(work)} modules ready ({failed} failed); {compiled} modules under {out}")
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build_tools.aot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", action="append", help=f"manifest(s) to compile (default ck_examples); known: {', '.join(catalog.suites())}")
    parser.add_argument("--targets", default=DEFAULT_TARGETS, help=f"comma-separated: {', '.join(targets.KNOWN_TARGETS)}")
    parser.add_argument("--ops", default=None, help="comma-separated operators (default: all)")
    parser.add_argument("--out", type=Path, default=compiler.artifacts_dir())
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--flags", default="", help="extra iree-compile flags, comma-separated (for bench --flags)")
    args = parser.parse_args(argv)
    return build(args.suite or ["ck_examples"], args.targets.split(","), args.out, args.jobs,
                 args.ops.split(",") if args.ops else None, tuple(f for f in args.flags.split(",") if f))


if __name__ == "__main__":
    sys.exit(main())
