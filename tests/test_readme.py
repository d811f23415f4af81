"""The README's Python example runs as written."""

import re
from pathlib import Path

import numpy as np


def test_readme_python_examples_run():
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        namespace = {}
        exec(compile(block, "README.md", "exec"), namespace)  # the project's own documentation, not user input
        # every example computes something: arrays, or (In a PyTorch training loop) tensors
        assert any(isinstance(v, np.ndarray) or type(v).__name__ == "Tensor" for v in namespace.values())


README = Path(__file__).resolve().parent.parent / "README.md"
CPU_BUILD = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def test_readme_says_how_to_install_pytorchs_cpu_build_before_the_extras():
    text = README.read_text()
    assert CPU_BUILD in text
    extras = [text.index(extra) for extra in ('-e ".[torch]"', '-e ".[test]"')]
    assert text.index(CPU_BUILD) < min(extras)


def test_readme_gives_the_cpu_step_speed_per_host_kind_with_its_command():
    text = README.read_text()
    assert "faster than PyTorch's for both" not in text
    assert "python -m build_tools.train --interleave" in text
    intel = next(line for line in text.splitlines() if line.strip().startswith("| Intel Xeon, AVX-512 and AMX"))
    zen4 = next(line for line in text.splitlines() if line.strip().startswith("| AMD Zen 4"))
    assert "0.85–0.88×" in intel and "0.90–0.93×" in intel and "seven" in intel
    assert "0.84–0.87×" in zen4 and "1.12–1.25×" in zen4 and "four" in zen4 and "no AMX" in zen4
