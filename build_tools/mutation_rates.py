"""How often the known-answer check refuses a wrong module, per operator and mutation (build_tools/mutations.py).

    python -m build_tools.mutation_rates [--scale 1] [--nan 100] [--confirm 3] [--seed 0]

For each operator's problem (``mutations.problems``: float32, channels-last, sampled by the check) and each
mutation, over every position it may take (every channel, every batch index, every row; ``--nan`` positions
drawn at random for a NaN):

- **kept**: how many of those positions the check's sample keeps (``known_answer.sample_of``): a mutation there
  is looked at, one elsewhere is not;
- **caught**: how many the check refuses, judged exactly on every position: the right module's whole result
  (compiled), rewritten in NumPy as the module would be (``Rewrite.apply``), judged by ``known_answer.judge``
  (so a rewrite that changes nothing the tolerance sees counts as missed); a mutation of an input or of the
  padding (one position: the whole result) is judged from its compiled run;
- **compiled**: ``--confirm`` positions of each (the first kept, the first left out, others at random) made into
  one module, compiled and run through IREE's runtime on the CPU and judged by ``known_answer.verify``: how many
  it refused, and whether each verdict is the one predicted.

**unchanged** counts the positions where the rewrite changes nothing (a row equal to its neighbour: no wrong
module), left out of the miss chance: that of a wrong module of the kind at a uniformly random position,
1 - caught / (positions - unchanged). Printed as a Markdown
table (docs/VERIFICATION.md holds the one for the default arguments).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from build_tools import mutations
from ops import known_answer


def _positions(problem, kind: str, nan_count: int, rng) -> list:
    if kind != "nan":
        return mutations.positions(problem, kind)
    shape = known_answer.poisoned(problem)[0].shape
    return [tuple(int(rng.integers(extent)) for extent in shape) for _ in range(nan_count)]


def _predicted(problem, mutation, inputs: list, right: list) -> bool | str | None:
    """Whether the check refuses ``mutation``, from the right result rewritten in NumPy ("same" where the rewrite
    changes nothing: not a wrong module); None for a mutation of an input or of the padding (judged from its
    compiled run)."""
    rewrite = mutation.rewrite
    if rewrite is None or rewrite.array[0] != "result":
        return None
    results = list(right)
    results[rewrite.array[1]] = rewrite.apply(right[rewrite.array[1]])
    if np.array_equal(results[rewrite.array[1]], right[rewrite.array[1]], equal_nan=True):
        return "same"
    return not known_answer.judge(problem, inputs, results).passed


def _confirmed(positions: list, sample_kept: list, count: int, rng) -> list:
    """Up to ``count`` positions to compile: the first kept, the first left out, then others at random."""
    chosen = [next((p for p, k in zip(positions, sample_kept) if k), None),
              next((p for p, k in zip(positions, sample_kept) if not k), None)]
    chosen = [p for p in chosen if p is not None]
    others = [p for p in positions if p not in chosen]
    for index in rng.permutation(len(others))[:max(count - len(chosen), 0)]:
        chosen.append(others[index])
    return chosen[:count]


def rates(problem, nan_count: int = 100, confirm: int = 3, seed: int = 0) -> list[dict]:
    """One row per applicable mutation of ``problem`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    inputs, sample = known_answer.inputs_for(problem), mutations.kept(problem)
    drawn = {kind: _positions(problem, kind, nan_count, rng) for kind in mutations.NAMES}
    drawn = {kind: positions for kind, positions in drawn.items() if positions}
    kept = {kind: [_kept(problem, kind, p, sample) for p in positions] for kind, positions in drawn.items()}
    compiled_at = {kind: _confirmed(drawn[kind], kept[kind], confirm, rng) for kind in drawn}
    built = {(kind, p): mutations.build(problem, kind, p) for kind in drawn for p in compiled_at[kind]}
    spec = mutations.module(problem, list(built.values()))
    data = mutations.compiled(spec)
    right = mutations.whole(problem, mutations.function(spec, data, mutations.UNMUTATED), inputs)
    rows = []
    for kind, positions in drawn.items():
        verdicts = {p: not mutations.verdict(problem, mutations.function(spec, data, built[(kind, p)])).passed
                    for p in compiled_at[kind]}
        predicted = [_predicted(problem, mutations.build(problem, kind, p), inputs, right) for p in positions]
        same = sum(v == "same" for v in predicted)
        caught = [False if v == "same" else v if v is not None else verdicts.get(p)
                  for p, v in zip(positions, predicted)]
        agree = all(caught[positions.index(p)] == v for p, v in verdicts.items())
        rows.append(dict(op=problem.op, problem=problem.name, mutation=kind, positions=len(positions),
                         kept=sum(kept[kind]), same=same, caught=sum(bool(c) for c in caught),
                         compiled=len(verdicts),
                         compiled_caught=sum(verdicts.values()), agree=agree))
    return rows


def _kept(problem, kind: str, position: tuple, sample: dict) -> bool:
    """Whether the sample looks where a mutation of ``kind`` at ``position`` is wrong."""
    if kind == "nan":
        return mutations.in_sample(problem, position, sample)
    if kind in ("channel", "row", "batch"):
        axis = mutations.axis_of(problem, kind)
        return position[0] in sample.get(axis, [position[0]])
    return True  # the whole result, or every position a missing tap or another padding touches


def table(rows: list[dict]) -> str:
    lines = ["| operator | mutation | positions | kept by the sample | unchanged | caught | miss chance | "
             "compiled: refused (agrees) |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        miss = 1 - r["caught"] / max(r["positions"] - r["same"], 1)
        lines.append(f"| {r['op']} | {r['mutation']} | {r['positions']} | {r['kept']} | {r['same']} | {r['caught']} | "
                     f"{miss:.0%} | {r['compiled_caught']}/{r['compiled']} ({'yes' if r['agree'] else 'NO'}) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1, help="divide the problems' spatial sizes by this")
    parser.add_argument("--nan", type=int, default=100, help="random positions for a NaN")
    parser.add_argument("--confirm", type=int, default=3, help="compiled positions per mutation")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = []
    for problem in mutations.problems(scale=args.scale).values():
        start = time.perf_counter()
        rows += rates(problem, args.nan, args.confirm, args.seed)
        print(f"{problem.name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(table(rows))
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
