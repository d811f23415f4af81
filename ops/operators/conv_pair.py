"""A convolution layer's two gradients in one module: its backward-data and weight-gradient modules side by side,
called by one function that reads grad_out once as an argument of both.

    pair(grad_out, weight, x) -> (grad_in, grad_w) = (data(grad_out, weight), weight_gradient(x, grad_out))

Each module is the one its own problem's call serves (the same form, tiles and flags), made private. Where both
compute in a scaled split (f16x1), each scales grad_out by its largest magnitude into a float16 copy by the same
lines: IREE's common-subexpression elimination keeps one of each (one largest magnitude and two copies where the two
tile their copies apart), so the pair reads grad_out's float32 two or three times where the two modules read it
four times (``policy.joins``). Nothing else is shared, and nothing else changes: the pair's results are the two
modules' own, bit for bit, which is how ``ops.torch`` takes it (``calls.Paired``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..problem import ConvBwdDataProblem, ConvBwdWeightProblem

OP = "conv_bwd_pair"
_ALIAS = re.compile(r"^!(\w+) = (.+)$", re.M)


@dataclass(frozen=True)
class ConvBwdPair:
    """One layer's backward-data and weight-gradient problems (``pairs``: the same convolution)."""

    data: ConvBwdDataProblem
    weight: ConvBwdWeightProblem

    op = OP

    @property
    def name(self) -> str:
        """The data problem's name, its operator's prefix made the pair's (both name the same convolution)."""
        return OP + self.data.name.removeprefix(self.data.op)

    @property
    def channels_last(self) -> bool:
        return self.data.channels_last

    @property
    def summary(self) -> str:
        return f"{OP} {self.data.summary.removeprefix(self.data.op + ' ')}"


def pairs(data, weight) -> bool:
    """Whether ``data`` and ``weight`` are one convolution's two gradients: a plain backward-data (no epilogue) and
    a weight gradient of the same layout, sizes, windows, groups and precision."""
    if not (isinstance(data, ConvBwdDataProblem) and isinstance(weight, ConvBwdWeightProblem)):
        return False
    same = ("layout", "dtype", "batch", "input_spatial", "output_spatial", "stride", "dilation", "padding", "groups",
            "in_channels", "out_channels", "filter_spatial", "precision")
    return data.epilogue is None and all(getattr(data, f) == getattr(weight, f) for f in same)


def render(pair: ConvBwdPair, data_module: str, weight_module: str) -> str:
    """The pair's module from the two problems' modules (``compiler.ModuleSpec.mlir``): their type aliases written
    out (the two use the same names for different types), their functions made private, and the pair's function
    that calls both on its arguments: grad_out, the weight, x, then the two destinations."""
    data_module, weight_module = _written_out(data_module), _written_out(weight_module)
    data_args, data_result = _signature(data_module, pair.data.name)
    weight_args, weight_result = _signature(weight_module, pair.weight.name)
    types = {**dict(weight_args), **dict(data_args)}
    inputs = ", ".join(f"%{v}: {types[v]}" for v in ("grad_out", "weight", "x"))
    call = "  %{0} = func.call @{1}({2}) : ({3}) -> {4}\n"
    return "\n".join([
        _private(data_module, pair.data.name), _private(weight_module, pair.weight.name),
        f"func.func @{pair.name}({inputs}, %grad_in_dst: {data_result} {{iree.abi.output = 0 : index}}, "
        f"%grad_w_dst: {weight_result} {{iree.abi.output = 1 : index}}) -> ({data_result}, {weight_result}) {{",
        call.format("grad_in", pair.data.name, "%grad_out, %weight, %grad_in_dst",
                    ", ".join(t for _, t in data_args), data_result)
        + call.format("grad_w", pair.weight.name, "%x, %grad_out, %grad_w_dst",
                      ", ".join(t for _, t in weight_args), weight_result)
        + f"  return %grad_in, %grad_w : {data_result}, {weight_result}\n}}\n"])


def _written_out(module: str) -> str:
    """``module`` without its type aliases: each use replaced by the type it names."""
    aliases = dict(_ALIAS.findall(module))
    text = _ALIAS.sub("", module)
    for alias in sorted(aliases, key=len, reverse=True):
        text = re.sub(rf"!{alias}\b(?!\.)", aliases[alias], text)
    return text


def _private(module: str, function: str) -> str:
    return module.replace(f"func.func @{function}(", f"func.func private @{function}(", 1)


def _signature(module: str, function: str) -> tuple[list[tuple[str, str]], str]:
    """The public function's arguments ((name, type), the destination last) and result type, in ``module`` (its
    aliases written out)."""
    found = re.search(rf"^func\.func @{function}\((.*)\) -> (.+) \{{$", module, re.M)
    assert found is not None, f"{OP}: no function @{function} in its module"
    args = [re.match(r"%?(\w+): ([^ ]+)", a).groups() for a in found.group(1).split(", %")]
    return args, found.group(2)
