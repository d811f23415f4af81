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
