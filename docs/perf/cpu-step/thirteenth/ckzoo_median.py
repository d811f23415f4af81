"""The CK and zoo CPU tables (batch 1, float32) as ops.torch runs the kernels (the launcher), from build_tools.bench's
JSON: each row's PyTorch/ours, the median, the rows at 0.8x or more, and each row against the eleventh session's
launcher run (docs/perf/cpu-step/eleventh/ckzoo_repeat3, the same command).

    python -m build_tools.bench --device local-task --suite ck_examples|zoo --set batch=1 --set dtype=float32 \
        --repeat 3 --seed 1 --launcher torch --out DIR
    python docs/perf/cpu-step/thirteenth/ckzoo_median.py DIR
"""
import json
import statistics
import sys
from pathlib import Path

EARLIER = Path(__file__).resolve().parent.parent / "eleventh" / "ckzoo_repeat3"


def rows(directory: Path) -> dict:
    found = {}
    for suite in ("ck_examples", "zoo"):
        for r in json.loads((directory / f"local-task-{suite}-torch-launcher.json").read_text())["rows"]:
            found[(suite, r["operator"], r["problem"])] = r
    return found


def ratio(r: dict):
    return r["torch_seconds"] / r["seconds"] if r.get("torch_seconds") and r.get("seconds") else None


def main() -> None:
    now, earlier = rows(Path(sys.argv[1])), rows(EARLIER)
    timed = [k for k in now if ratio(now[k])]
    ratios = [ratio(now[k]) for k in timed]
    failing = [k[2] for k, r in now.items() if not r.get("ok")]
    print(f"rows {len(now)}; with a PyTorch time: {len(timed)}; median PyTorch/ours {statistics.median(ratios):.2f}x; "
          f"rows at 0.8x or more {sum(v >= 0.8 for v in ratios)}; not ok: {', '.join(failing) or 'none'}")
    print("| suite | operator | problem | ours ms | PyTorch ms | PyTorch/ours | eleventh: ours ms | PyTorch/ours |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for k, r in now.items():
        before = earlier.get(k, {})
        cells = [f"{1e3 * r['seconds']:.3f}" if r.get("seconds") else "-",
                 f"{1e3 * r['torch_seconds']:.3f}" if r.get("torch_seconds") else "-",
                 f"{ratio(r):.2f}x" if ratio(r) else "-",
                 f"{1e3 * before['seconds']:.3f}" if before.get("seconds") else "-",
                 f"{ratio(before):.2f}x" if before and ratio(before) else "-"]
        print(f"| {' | '.join(k)} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
