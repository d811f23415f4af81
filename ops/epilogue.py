"""Fused epilogues: ``grad_in = f(acc, d0, d1, ...)``, parsed by our own grammar into a frozen tree, evaluated
here on arrays (NumPy, or torch); ``ops/epilogue_mlir.py`` renders the tree as MLIR arith ops.

User text is never ``eval``ed. The grammar (precedence from low to high):

    expr     := additive (("<" | "<=" | ">" | ">=" | "==" | "!=") additive)?
    additive := term (("+" | "-") term)*
    term     := unary (("*" | "/") unary)*
    unary    := "-" unary | primary
    primary  := NUMBER | NAME | FUNCTION "(" expr ("," expr)* ")" | "(" expr ")"

Names: ``acc`` (the float32 backward-data result), ``d0``, ``d1``, ... (the D tensors, in float32), and any
other identifier is a named float parameter passed as a keyword argument. Functions: ``min``, ``max``
(NaN-propagating, as torch.minimum/maximum), ``abs``, ``where(c, a, b)`` (``a`` where ``c`` is non-zero).
Comparisons give 1.0 or 0.0. Arithmetic is float32.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass

from .validation import check

NAMED = {
    "add": "acc + d0",                     # a residual branch's gradient joins
    "bilinear": "alpha * acc + beta * d0",
    "scale": "alpha * acc",
    "add_relu": "max(acc + d0, 0)",        # CK's bias-ReLU example
    "relu_grad": "where(d0 > 0, acc, 0)",  # the ReLU backward mask from the forward activation
}
FUNCTIONS = {"min": 2, "max": 2, "abs": 1, "where": 3}
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
MAX_LENGTH = 2000
MAX_DEPTH = 64

_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<op><=|>=|==|!=|[-+*/(),<>]))"
)
_SPACE = re.compile(r"\s*")
_D_NAME = re.compile(r"d(\d+)$")           # what looks like a D tensor's name
_D_CANONICAL = re.compile(r"d(0|[1-9]\d*)$")  # what is one: d0, d1, ... (no leading zeros)
_PRECEDENCE = {"compare": 1, "+": 2, "-": 2, "*": 3, "/": 3}


@dataclass(frozen=True)
class Node:
    """A parsed expression. A chain of ``+ -`` (or of ``* /``) is one node, ``value`` its operators in order
    (evaluated left to right), so a long flat sum is wide, not deep: nesting only comes from what the user
    nested, which the parser bounds by MAX_DEPTH."""

    kind: str          # "number", "name", "neg", "chain", "compare", "call"
    value: object = None
    args: tuple = ()

    def _precedence(self) -> int:
        if self.kind == "compare":
            return _PRECEDENCE["compare"]
        if self.kind == "chain":
            return _PRECEDENCE[self.value[0]]
        return 4

    def _operand(self, arg: "Node", parent: int) -> str:
        return f"({arg.text()})" if arg._precedence() <= parent else arg.text()

    def text(self) -> str:
        """Canonical text, parenthesized only where the grammar needs it: equal expressions give equal module
        names, and parsing it again gives the same tree at no more nesting than the user's text."""
        if self.kind == "number":
            return repr(float(self.value))
        if self.kind == "name":
            return self.value
        if self.kind == "neg":
            return "-" + self._operand(self.args[0], 3)
        if self.kind == "compare":
            return f"{self._operand(self.args[0], 1)} {self.value} {self._operand(self.args[1], 1)}"
        if self.kind == "chain":
            own = self._precedence()
            parts = [self._operand(self.args[0], own - 1)]  # a chain's first operand of the same precedence is flat
            parts += [f"{op} {self._operand(arg, own)}" for op, arg in zip(self.value, self.args[1:])]
            return " ".join(parts)
        return f"{self.value}({', '.join(a.text() for a in self.args)})"

    def names(self) -> set[str]:
        found = {self.value} if self.kind == "name" else set()
        for arg in self.args:
            found |= arg.names()
        return found


class _Parser:
    def __init__(self, op: str, text: str, max_length: int | None = MAX_LENGTH):
        self.op, self.text = op, text
        check(max_length is None or len(text) <= max_length, f"{op}: epilogue is longer than {max_length} characters")
        self.tokens = self._tokenize()
        self.position = 0
        self.depth = 0

    def _error(self, message: str):
        raise ValueError(f"{self.op}: epilogue {self.text!r}: {message}")

    def _tokenize(self) -> list[tuple[str, str, int]]:
        tokens, index = [], 0
        while True:
            space = _SPACE.match(self.text, index).end()
            if space == len(self.text):
                return tokens
            match = _TOKEN.match(self.text, index)
            if not match:
                self._error(f"unexpected character {self.text[space]!r} at position {space}")
            kind = match.lastgroup
            tokens.append((kind, match.group(kind), match.start(kind)))
            index = match.end()

    def _peek(self):
        return self.tokens[self.position] if self.position < len(self.tokens) else (None, None, len(self.text))

    def _take(self, expected: str | None = None, description: str | None = None):
        """The next token; ``expected`` is the exact text it must be, ``description`` what to call it in errors."""
        kind, value, where = self._peek()
        if kind is None:
            self._error(f"unexpected end of expression (expected {description or (repr(expected) if expected else 'more')})")
        if expected is not None and value != expected:
            self._error(f"expected {expected!r} at position {where}, but got {value!r}")
        self.position += 1
        return kind, value, where

    def parse(self) -> Node:
        if not self.tokens:
            self._error("empty expression")
        node = self._expression()
        kind, value, where = self._peek()
        if kind is not None:
            self._error(f"unexpected {value!r} at position {where}")
        return node

    def _nest(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self._error(f"nested deeper than {MAX_DEPTH} levels")

    def _expression(self) -> Node:
        self._nest()
        left = self._chain(("+", "-"), self._term)
        _, value, _ = self._peek()
        if value in COMPARISONS:
            self._take()
            left = Node("compare", value, (left, self._chain(("+", "-"), self._term)))
        self.depth -= 1
        return left

    def _chain(self, operators: tuple[str, ...], operand) -> Node:
        args, ops = [operand()], []
        while self._peek()[1] in operators:
            ops.append(self._take()[1])
            args.append(operand())
        return args[0] if not ops else Node("chain", tuple(ops), tuple(args))

    def _term(self) -> Node:
        return self._chain(("*", "/"), self._unary)

    def _unary(self) -> Node:
        if self._peek()[1] == "-":
            self._take()
            self._nest()
            node = Node("neg", None, (self._unary(),))
            self.depth -= 1
            return node
        return self._primary()

    def _primary(self) -> Node:
        kind, value, where = self._take(description="a number, a name or '('")
        if kind == "number":
            number = float(value)
            if number != number or number in (float("inf"), float("-inf")):
                self._error(f"the number {value!r} does not fit a float")
            return Node("number", number)
        if value == "(":
            node = self._expression()
            self._take(")")
            return node
        if kind != "name":
            self._error(f"unexpected {value!r} at position {where}")
        if self._peek()[1] == "(":
            if value not in FUNCTIONS:
                self._error(f"unknown function {value!r} at position {where}; the functions are {', '.join(FUNCTIONS)}")
            self._take("(")
            args = [self._expression()]
            while self._peek()[1] == ",":
                self._take(",")
                args.append(self._expression())
            self._take(")")
            if len(args) != FUNCTIONS[value]:
                self._error(f"{value}() takes {FUNCTIONS[value]} argument(s), but got {len(args)}")
            return Node("call", value, tuple(args))
        if value in FUNCTIONS:
            self._error(f"{value} is a function: call it as {value}(...)")
        if _D_NAME.match(value) and not _D_CANONICAL.match(value):
            self._error(f"{value!r} at position {where} is no D tensor's name: they are d0, d1, ... without leading zeros")
        return Node("name", value)


@dataclass(frozen=True)
class Epilogue:
    """A checked epilogue: canonical text, how many D tensors it reads, and its parameters in order."""

    text: str
    num_ds: int
    param_names: tuple[str, ...]
    root: Node


def parse(op: str, epilogue, num_ds: int, params: dict) -> tuple[Epilogue | None, tuple[float, ...]]:
    """Check ``epilogue`` (a name from NAMED, an expression, or None) against the D tensors and parameters given.

    Returns the epilogue and its parameter values in ``param_names`` order.
    """
    if epilogue is None:
        check(num_ds == 0, f"{op}: {num_ds} D tensor(s) given, but no epilogue uses them; pass epilogue=")
        check(not params, f"{op}: parameters {sorted(params)} given, but there is no epilogue")
        return None, ()
    check(isinstance(epilogue, str), f"{op}: epilogue must be a name ({', '.join(NAMED)}) or an expression string, but got {type(epilogue).__name__}")
    text = NAMED.get(epilogue, epilogue)
    root = _Parser(op, text).parse()
    names = root.names()
    for name in sorted(names):
        d = _D_NAME.match(name)
        if d:
            check(
                int(d.group(1)) < num_ds,
                f"{op}: epilogue {text!r} reads {name}, but only {num_ds} D tensor(s) were given (ds has d0..d{num_ds - 1})"
                if num_ds else f"{op}: epilogue {text!r} reads {name}, but no D tensors were given (ds=())",
            )
    used_ds = {int(_D_NAME.match(n).group(1)) for n in names if _D_NAME.match(n)}
    unused = [f"d{i}" for i in range(num_ds) if i not in used_ds]
    check(not unused, f"{op}: D tensor(s) {', '.join(unused)} given, but epilogue {text!r} does not read them")
    param_names = tuple(sorted(n for n in names if n != "acc" and not _D_NAME.match(n)))
    missing = [n for n in param_names if n not in params]
    check(not missing, f"{op}: epilogue {text!r} needs parameter(s) {', '.join(missing)}, passed as keyword arguments")
    extra = sorted(set(params) - set(param_names))
    check(not extra, f"{op}: unexpected keyword argument(s) {', '.join(extra)}: epilogue {text!r} does not use them")
    values = []
    for name in param_names:
        value = params[name]
        check(
            isinstance(value, numbers.Real) and not isinstance(value, bool),  # NumPy's float32, int64, ... too
            f"{op}: epilogue parameter {name} must be a number, but got {value!r}",
        )
        values.append(float(value))
    return Epilogue(root.text(), num_ds, param_names, root), tuple(values)


def parameter_names(op: str, epilogue: str) -> tuple[str, ...]:
    """The named parameters an epilogue (a name from NAMED or an expression) needs."""
    names = _Parser(op, NAMED.get(epilogue, epilogue)).parse().names()
    return tuple(sorted(n for n in names if n != "acc" and not _D_NAME.match(n)))


def parse_canonical(text: str) -> Node:
    """Parse an Epilogue's canonical text back into its tree (the problem object stores text). The text came
    from an accepted expression: it nests no deeper, but its numbers may be longer (``1`` is ``1.0``)."""
    return _Parser("epilogue", text, max_length=None).parse()


def evaluate(root: Node, values: dict, xp=None):
    """Array evaluation of a parsed epilogue (NumPy float64 by default; ``xp=torch`` for torch tensors), for
    references and the benchmark's PyTorch comparison: the same grammar, no eval."""
    import numpy as np

    xp = xp or np
    if root.kind == "number":
        return float(root.value)
    if root.kind == "name":
        return values[root.value]
    args = [evaluate(a, values, xp) for a in root.args]
    if root.kind == "neg":
        return -args[0]
    if root.kind == "chain":
        value = args[0]
        for op, operand in zip(root.value, args[1:]):
            if op == "+":
                value = value + operand
            elif op == "-":
                value = value - operand
            elif op == "*":
                value = value * operand
            else:
                value = value / operand
        return value
    if root.kind == "compare":
        a, b = args
        result = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[root.value]
        return result * 1.0  # a boolean array as 1.0 / 0.0
    if root.value == "where":
        condition, a, b = args
        return xp.where(condition != 0, *(x if hasattr(x, "shape") else xp.asarray(x) for x in (a, b))) if xp is not np else np.where(condition != 0, a, b)
    if root.value == "abs":
        return xp.abs(args[0])
    a, b = (x if hasattr(x, "shape") else xp.asarray(x) for x in args)
    return xp.minimum(a, b) if root.value == "min" else xp.maximum(a, b)
