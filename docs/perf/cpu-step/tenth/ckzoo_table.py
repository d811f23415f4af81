import json, statistics, sys
def load(path):
    rows = {}
    for suite in ("ck_examples", "zoo"):
        for r in json.load(open(path.format(suite)))["rows"]:
            rows[(suite, r["operator"], r["problem"])] = r
    return rows
new, old = load(sys.argv[1]), load(sys.argv[2])
def ratio(r):
    return r["torch_seconds"] / r["seconds"] if r.get("torch_seconds") and r.get("seconds") else None
rn = [ratio(r) for r in new.values() if ratio(r)]
ro = [ratio(r) for r in old.values() if ratio(r)]
print(f"rows {len(new)}; with a PyTorch time: now {len(rn)}, before {len(ro)}")
print(f"median ours vs PyTorch (PyTorch time / ours): now {statistics.median(rn):.2f}x, before (another host) {statistics.median(ro):.2f}x")
print(f"all ok: {all(r['ok'] for r in new.values())}")
print("| suite | operator | problem | ours ms | PyTorch ms | PyTorch/ours | before: ours ms | PyTorch/ours |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for k, r in new.items():
    o = old.get(k, {})
    f = lambda v: f"{1e3 * v:.2f}" if v else "-"
    g = lambda x: f"{x:.2f}x" if x else "-"
    print(f"| {k[0]} | {k[1]} | {k[2]} | {f(r['seconds'])} | {f(r.get('torch_seconds'))} | {g(ratio(r))} | {f(o.get('seconds'))} | {g(ratio(o) if o else None)} |")
