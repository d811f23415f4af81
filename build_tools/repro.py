"""Replay a wrong-result reproducer of ``docs/repro/``: compile each of its modules and run it through IREE's runtime
on the known-answer inputs, against the float64 reference.

    python -m build_tools.repro docs/repro/<problem> [--device cuda] [--no-compile]

Each folder holds the problem (``problem.json``: the compile sweep's seed and index, or train.py's bfloat16
model), and for each module IREE 3.13 got wrong on the H100 its MLIR and exact compile commands
(``*.compile.sh``, two steps through the HAL-level program). Inputs are ``random_inputs`` seeded with the problem
name's CRC-32 (printed); the result is judged as ``ops.known_answer`` judges it (worst position, expected, got).
``--no-compile`` runs the ``.vmfb`` files already beside the MLIR (a GPU machine without the compiler).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

from ops import arrays, catalog, known_answer, runtime


def problem_of(folder: Path):
    recipe = json.loads((folder / "problem.json").read_text())
    if "sweep" in recipe:
        seed, index = recipe["sweep"]
        problem = catalog.random_problems(seed, max(200, index + 1))[index][1]
    else:
        from build_tools.verify_run import train_problems

        problem = next(p for p in train_problems() if p.name == recipe["problem"])
    assert problem.name == recipe["problem"], (problem.name, recipe["problem"])
    return problem


def replay(folder: Path, device: str, compile_: bool) -> int:
    problem = problem_of(folder)
    print(f"{problem.name}: inputs seeded with {zlib.crc32(problem.name.encode())}")
    wrong = 0
    work = Path(tempfile.mkdtemp(prefix="ops-repro-")) if compile_ else folder
    for script in sorted(folder.glob("*.compile.sh")):
        stem = script.name[:-len(".compile.sh")]
        if compile_:  # in a scratch folder: the reproducer stays as it is
            for suffix in (".mlir", ".compile.sh"):
                shutil.copy(folder / f"{stem}{suffix}", work)
            subprocess.run(["sh", str(work / script.name)], check=True)
        data = (work / f"{stem}.vmfb").read_bytes()
        spec = type("Spec", (), {"name": problem.name})
        function = runtime.loaded_function(spec, data, device, runtime.get_device(device))
        verdict = known_answer.verify(problem, lambda inputs, axes: arrays.known_run(function, problem, inputs, axes))
        wrong += not verdict.passed
        print(f"  {stem}: {'right' if verdict.passed else 'WRONG'}: {verdict.describe()}")
    return 1 if wrong else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args(argv)
    return replay(args.folder, args.device, not args.no_compile)


if __name__ == "__main__":
    sys.exit(main())
