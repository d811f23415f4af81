"""An epilogue's tree (``ops/epilogue.py``) as MLIR: one ``mlir/epilogue.mlir`` fragment per operation, in f32,
inside the ``linalg.generic`` body of the store that fuses it."""

from __future__ import annotations

from . import render as mlir
from .epilogue import Node

PREDICATES = {"<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "==": "oeq", "!=": "une"}  # arith.cmpf: ordered; != unordered
ARITHMETIC = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}  # mlir/epilogue.mlir's fragments


def _float_literal(value: float) -> str:
    return f"{value:.9e}"


def emit(root: Node, operands: dict[str, str], prefix: str = "%e") -> tuple[list[str], str]:
    """MLIR lines (inside a linalg.generic body) computing ``root`` in f32, one ``mlir/epilogue.mlir`` fragment per
    operation; ``operands`` maps names to f32 values."""
    lines: list[str] = []
    counter = iter(range(1 << 30))

    def op(fragment: str, **values) -> str:
        result = f"{prefix}{next(counter)}"
        lines.append(mlir.render(f"epilogue.{fragment}", result=result, **values))
        return result

    def as_f32(value: str, kind: str) -> str:
        if kind == "f32":
            return value
        one, zero = op("constant", value="1.0"), op("constant", value="0.0")
        return op("select", condition=value, a=one, b=zero)

    def as_i1(value: str, kind: str) -> str:
        if kind == "i1":
            return value
        return op("compare", predicate="une", a=value, b=op("constant", value="0.0"))

    def visit(node: Node) -> tuple[str, str]:
        if node.kind == "number":
            return op("constant", value=_float_literal(node.value)), "f32"
        if node.kind == "name":
            return operands[node.value], "f32"
        if node.kind == "neg":
            return op("negate", a=as_f32(*visit(node.args[0]))), "f32"
        if node.kind == "chain":
            value = as_f32(*visit(node.args[0]))
            for symbol, arg in zip(node.value, node.args[1:]):
                value = op(ARITHMETIC[symbol], a=value, b=as_f32(*visit(arg)))
            return value, "f32"
        if node.kind == "compare":
            a, b = (as_f32(*visit(arg)) for arg in node.args)
            return op("compare", predicate=PREDICATES[node.value], a=a, b=b), "i1"
        if node.value == "where":
            condition = as_i1(*visit(node.args[0]))
            a, b = (as_f32(*visit(arg)) for arg in node.args[1:])
            return op("select", condition=condition, a=a, b=b), "f32"
        args = [as_f32(*visit(arg)) for arg in node.args]
        if node.value == "abs":
            return op("abs", a=args[0]), "f32"
        return op("minimum" if node.value == "min" else "maximum", a=args[0], b=args[1]), "f32"

    result = as_f32(*visit(root))
    return lines, result


def parameter(name: str, position: int) -> tuple[str, str]:
    """(lines, value): the named parameter read from the module's parameter vector ``%params``."""
    result = f"%param_{name}"
    return mlir.render("epilogue.parameter", result=result, index=f"%param_index_{position}", position=position), result
