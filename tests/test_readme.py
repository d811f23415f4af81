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
        assert any(isinstance(v, np.ndarray) for v in namespace.values())
