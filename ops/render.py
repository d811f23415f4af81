"""Rendering the linalg MLIR templates in ``mlir/`` with the static shapes of one problem.

Templates use ``string.Template`` placeholders (``${name}``), which never clash with MLIR's sigils.
Template logic stays in the templates' comments and in the small helpers here: a template shows the
math; the helpers only spell shapes, maps and index lists.
"""

from __future__ import annotations

import functools
import string
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def templates_dir() -> Path:
    """``mlir/`` beside the package in a source checkout, or ``ops/mlir`` inside an installed wheel."""
    for candidate in (_PACKAGE_DIR.parent / "mlir", _PACKAGE_DIR / "mlir"):
        if (candidate / "conv_bwd_data.mlir").is_file():
            return candidate
    raise FileNotFoundError(f"the MLIR templates were not found beside {_PACKAGE_DIR}")


@functools.lru_cache(maxsize=None)
def _template(name: str) -> string.Template:
    return string.Template((templates_dir() / f"{name}.mlir").read_text())


def render(name: str, **values) -> str:
    """Fill template ``mlir/<name>.mlir``; a missing value is a KeyError, never a silent blank."""
    return _template(name).substitute(**{k: str(v) for k, v in values.items()})


def tensor(shape, element: str) -> str:
    return f"tensor<{'x'.join(str(s) for s in shape)}x{element}>" if shape else f"tensor<{element}>"


def dims(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def affine_map(domain: list[str], results: list[str]) -> str:
    return f"affine_map<({', '.join(domain)}) -> ({', '.join(results)})>"


def iterators(kinds: list[str]) -> str:
    return "[" + ", ".join(f'"{k}"' for k in kinds) + "]"


def i64_array(values) -> str:
    return f"dense<[{', '.join(str(v) for v in values)}]> : tensor<{len(values)}xi64>"


def index_list(values) -> str:
    return ", ".join(str(v) for v in values)


def indent(text: str, spaces: int = 2) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.splitlines())
