"""The CK and zoo CPU tables (batch 1, float32) through IREE's runtime and as ops.torch runs the kernels (the CPU
launcher on PyTorch's threads), from build_tools.bench's JSON: each row's PyTorch/ours both ways, and the medians.

    python -m build_tools.bench --suite ck_examples|zoo --set batch=1 --set dtype=float32 --repeat 3|7 --seed 1 \
        [--launcher torch] --out DIR        (four runs)
    python docs/perf/cpu-step/eleventh/ckzoo_launchers.py DIR
"""
import json
import statistics
import sys
from pathlib import Path


def rows(directory: Path, suffix: str) -> dict:
    found = {}
    for suite in ("ck_examples", "zoo"):
        for r in json.loads((directory / f"local-task-{suite}{suffix}.json").read_text())["rows"]:
            found[(suite, r["operator"], r["problem"])] = r
    return found


def ratio(r: dict):
    return r["torch_seconds"] / r["seconds"] if r.get("torch_seconds") and r.get("seconds") else None


def main() -> None:
    directory = Path(sys.argv[1])
    runtime, launched = rows(directory, ""), rows(directory, "-torch-launcher")
    both = [k for k in runtime if ratio(runtime[k]) and k in launched and ratio(launched[k])]
    print(f"rows {len(runtime)}; with a PyTorch time in both runs: {len(both)}")
    for label, table in (("IREE's runtime", runtime), ("ops.torch's launcher", launched)):
        ratios = [ratio(table[k]) for k in both]
        failed = [k[2] for k, r in table.items() if not r["ok"]]
        print(f"{label}: median PyTorch/ours {statistics.median(ratios):.2f}x; rows at 0.8x or more "
              f"{sum(x >= 0.8 for x in ratios)}; failing their tolerance: {', '.join(failed) or 'none'}")
    print("| suite | operator | problem | runtime ms | launcher ms | PyTorch ms (runtime's run) | PyTorch/ours: runtime | launcher |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    ms = lambda v: f"{1e3 * v:.3f}" if v else "-"  # noqa: E731
    x = lambda v: f"{v:.2f}x" if v else "-"  # noqa: E731
    for k, r in runtime.items():
        l = launched.get(k, {})  # noqa: E741
        print(f"| {k[0]} | {k[1]} | {k[2]} | {ms(r['seconds'])} | {ms(l.get('seconds'))} | {ms(r.get('torch_seconds'))} "
              f"| {x(ratio(r))} | {x(ratio(l) if l else None)} |")


if __name__ == "__main__":
    main()
