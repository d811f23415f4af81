"""Wrong modules, for testing the known-answer check (``ops/known_answer.py``) as a product: each is made from a
problem's right module, its MLIR changed (never a copy of its results), compiled by IREE for the CPU and judged by
``known_answer.verify`` through IREE's runtime, as a served module is (``arrays.known_run``).

A mutation rewrites one array of the module function, position by position (``Rewrite``; the MLIR in
``build_tools/mutations.mlir``): a result after the call, or an input before it. Which axis is a channel, a batch index,
a row or a filter tap is read from the operator's declared roles (``ops/roles.py``), so one builder serves every
operator:

    sign       the whole result negated
    channel    one channel of the result zeroed (the first channel axis: grad_in's C, grad_w's K)
    row        one row of the result (a position along its first spatial axis, or first tap axis) read from the next
    batch      one batch index's result read from another's
    tap        the last filter tap's contribution missing (the weight's last tap zeroed; grad_w's last tap zeroed)
    padding    the low padding one larger, the high one smaller, along the first axis where that fits (the same
               operator rendered for that padding; same shapes); the whole grid shifted by one where none does
    nan        one result position NaN

``module(problem, mutations)`` renders one module holding every mutation (one compile per problem), ``run``
loads one of its functions, ``verdict`` judges it. ``Rewrite.apply`` does the same to a NumPy array, for the
rates (``build_tools/mutation_rates.py``) and for checking the MLIR rewrite itself.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import string
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iree.compiler import ir

from ops import arrays, compiler, known_answer, policy, registry, render, runtime, targets

CPU = targets.parse_target("llvm-cpu")
DEVICE = "local-task"
NAMES = ("sign", "channel", "row", "batch", "tap", "padding", "nan")
_NAN = {"f32": "0x7FC00000", "f16": "0x7E00", "bf16": "0x7FC0"}


# --- What a mutation does ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rewrite:
    """One array rewritten position by position: ``mutated[i] = where(i) ? replacement : ±original[source(i)]``.

    ``array``: ("result", n) or ("input", n); ``source``: (axis, from, to) reads position ``from`` along ``axis``
    from ``to``, (axis, "next", None) reads every position from the next (the last from itself), () reads each
    from itself; ``where``: (axis, position) pairs that must all hold; ``replacement``: "zero" or "nan"."""

    array: tuple
    source: tuple = ()
    negate: bool = False
    where: tuple = ()
    replacement: str | None = None

    def apply(self, original) -> np.ndarray:
        """The same rewrite of a NumPy array."""
        original = np.asarray(original)
        mutated = original.copy()
        if self.source:
            axis, start, to = self.source
            index = [slice(None)] * original.ndim
            if start == "next":
                reads = np.minimum(np.arange(original.shape[axis]) + 1, original.shape[axis] - 1)
                mutated = np.take(original, reads, axis=axis)
            else:
                index[axis] = start
                mutated[tuple(index)] = np.take(original, to, axis=axis)
        if self.negate:
            mutated = -mutated
        if self.replacement is not None:
            index = [slice(None)] * original.ndim
            for axis, position in self.where:
                index[axis] = position
            mutated[tuple(index)] = 0 if self.replacement == "zero" else np.nan
        return mutated


@dataclass(frozen=True)
class Mutation:
    """A named mutation of one problem's module: a ``rewrite``, or the same operator rendered for ``inner`` (a
    problem of the same shapes, another padding) in place of the problem; ``at`` says where, for names and
    reports."""

    kind: str
    at: tuple = ()
    rewrite: Rewrite | None = None
    inner: object = None

    @property
    def name(self) -> str:
        return "_".join([self.kind, *map(str, self.at)])


def _roles(problem):
    return registry.module(problem).roles(problem)


def _axis(axes: tuple, kinds: tuple) -> int | None:
    """The first of ``axes`` holding an index of one of ``kinds`` (in that order of preference)."""
    for kind in kinds:
        for number, axis in enumerate(axes):
            if any(index.kind == kind for index in axis):
                return number
    return None


def _taps(axes: tuple) -> tuple:
    return tuple(number for number, axis in enumerate(axes) if any(index.kind == "tap" for index in axis))


def _shape(axes: tuple) -> tuple:
    return tuple(math.prod(index.extent for index in axis) for axis in axes)


def sign(problem) -> Mutation:
    return Mutation("sign", (), Rewrite(("result", 0), negate=True))


def channel(problem, position: int) -> Mutation | None:
    axis = _axis(_roles(problem).results[0], ("channel",))
    return None if axis is None else Mutation("channel", (position,), Rewrite(("result", 0), where=((axis, position),),
                                                                          replacement="zero"))


def row(problem, position: int) -> Mutation | None:
    axes = _roles(problem).results[0]
    axis = _axis(axes, ("spatial", "tap"))
    if axis is None:
        return None
    extent = _shape(axes)[axis]
    return Mutation("row", (position,), Rewrite(("result", 0), source=(axis, position, _neighbour(position, extent))))


def batch(problem, position: int) -> Mutation | None:
    axes = _roles(problem).results[0]
    axis = _axis(axes, ("batch",))
    if axis is None:
        return None
    extent = _shape(axes)[axis]
    return Mutation("batch", (position,), Rewrite(("result", 0), source=(axis, position, _neighbour(position, extent))))


def _neighbour(position: int, extent: int) -> int:
    return position + 1 if position + 1 < extent else position - 1


def tap(problem) -> Mutation | None:
    """The last filter tap's contribution gone: zeroed in the input that holds taps (a weight), else in the
    result that does (a weight gradient); None for an operator without declared taps (pooling)."""
    declared = _roles(problem)
    for kind, declared_arrays in (("input", declared.inputs), ("result", declared.results)):
        for number, axes in enumerate(declared_arrays):
            taps = _taps(axes)
            if taps:
                shape = _shape(axes)
                return Mutation("tap", (), Rewrite((kind, number), where=tuple((a, shape[a] - 1) for a in taps),
                                                   replacement="zero"))
    return None


def padding(problem) -> Mutation:
    """The same operator rendered with (low + 1, high - 1) padding (or (low - 1, high + 1)) along its first axis
    where that keeps every shape; where none does, the whole grid shifted by one along the first spatial axis."""
    for axis, (low, high) in enumerate(problem.padding):
        for shifted in ((low + 1, high - 1), (low - 1, high + 1)):
            if min(shifted) < 0:
                continue
            pads = tuple(shifted if a == axis else p for a, p in enumerate(problem.padding))
            try:
                inner = dataclasses.replace(problem, padding=pads)
            except ValueError:
                continue
            module = registry.module(problem)
            if module.results(inner) == module.results(problem) and _reads_padding(problem, inner):
                return Mutation("padding", (axis, *shifted), inner=inner)
    axis = _axis(_roles(problem).results[0], ("spatial",))
    return Mutation("padding", ("grid", axis), Rewrite(("result", 0), source=(axis, "next", None)))


def _reads_padding(problem, inner) -> bool:
    """Whether ``inner``'s answer differs from ``problem``'s on the check's inputs (max-pool's backward from the
    indices never reads the padding: its answer is the same, no mutation)."""
    inputs, reference = known_answer.inputs_for(problem), registry.module(problem).reference
    return not np.array_equal(reference(problem, inputs), reference(inner, inputs), equal_nan=True)


def nan(problem, position: tuple) -> Mutation:
    return Mutation("nan", position, Rewrite(("result", 0), where=tuple(enumerate(position)), replacement="nan"))


# --- Positions: the sample's, and every one ------------------------------------------------------------------


def kept(problem) -> dict:
    """The known-answer check's sample of ``problem``'s results: axis -> the positions it keeps along that axis
    (an axis it keeps whole is absent)."""
    sample = known_answer.sample_of(problem, known_answer.inputs_for(problem))
    return {axis: sorted(int(p) for p in positions) for axis, positions in sample.axes}


def positions(problem, kind: str) -> list:
    """Every position a mutation of ``kind`` may take (channel, row, batch: along its axis), or [()] for one that
    takes none; [] where it does not apply."""
    axes = _roles(problem).results[0]
    along = {"channel": ("channel",), "row": ("spatial", "tap"), "batch": ("batch",)}.get(kind)
    if kind == "nan":
        raise ValueError("nan: every result position; draw some (random_positions)")
    if along is None:
        return [()] if build(problem, kind) is not None else []
    axis = _axis(axes, along)
    return [] if axis is None else [(p,) for p in range(_shape(axes)[axis])]


def axis_of(problem, kind: str) -> int | None:
    """The result axis a mutation of ``kind`` is placed along (channel, row, batch)."""
    along = {"channel": ("channel",), "row": ("spatial", "tap"), "batch": ("batch",)}[kind]
    return _axis(_roles(problem).results[0], along)


def build(problem, kind: str, at: tuple = ()) -> Mutation | None:
    """The mutation ``kind`` of ``problem`` at ``at`` (see the module docstring); None where it does not apply."""
    makers = {"sign": sign, "channel": channel, "row": row, "batch": batch, "tap": tap, "padding": padding,
              "nan": nan}
    if kind == "nan":
        return nan(problem, tuple(at))
    return makers[kind](problem, *at)


def in_sample(problem, position: tuple, sample: dict | None = None) -> bool:
    """Whether the check keeps result position ``position`` (one index per axis)."""
    sample = kept(problem) if sample is None else sample
    return all(position[axis] in values for axis, values in sample.items())


# --- The module --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _fragments() -> dict:
    """``build_tools/mutations.mlir``'s fragments (``// fragment NAME: ...`` to the next), as string templates."""
    sections, name = {}, None
    for line in (Path(__file__).with_name("mutations.mlir")).read_text().splitlines():
        match = re.match(r"^// fragment ([a-z_]+)\b", line)
        if match:
            name = match.group(1)
            sections[name] = []
        elif name is not None:
            sections[name].append(line)
    return {key: string.Template("\n".join(lines).rstrip("\n")) for key, lines in sections.items()}


def _fill(fragment: str, **values) -> str:
    return _fragments()[fragment].substitute(**{k: str(v) for k, v in values.items()})


def rendered(problem) -> str:
    """``problem``'s module as the CPU compiles it first (its first form, the tuned configurations), without the
    workspace argument (``Lowering(transients=False)``: a function that passes its arguments on needs none)."""
    form = policy.forms_for(problem, CPU)[0]
    how = dataclasses.replace(policy.lowering(problem, CPU), transients=False)
    return registry.module(problem).render(problem, form, how)


def _private(text: str, name: str, context: ir.Context):
    """The one function of ``text``, parsed, renamed ``name`` and made private, its argument attributes (the
    destinations' iree.abi.output) dropped: (its printed text, its function type, its argument attributes)."""
    parsed = ir.Module.parse(text, context)
    (function,) = [op for op in parsed.body.operations if op.operation.name == "func.func"]
    attributes = [str(a) for a in ir.ArrayAttr(function.attributes["arg_attrs"])]
    function.attributes["sym_name"] = ir.StringAttr.get(name, context)
    function.attributes["sym_visibility"] = ir.StringAttr.get("private", context)
    del function.attributes["arg_attrs"]
    return str(function), ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value), attributes


def _rewrite(result: str, source: str, tensor: ir.RankedTensorType, rewrite: Rewrite) -> str:
    shape, element = list(tensor.shape), str(tensor.element_type)
    dims = render.dims("d", len(shape))
    lines = [_fill("index", axis=a) for a in range(len(shape))]
    read = [f"%i{a}" for a in range(len(shape))]
    if rewrite.source:
        axis, start, to = rewrite.source
        lines.append(_fill("shift", axis=axis, last=shape[axis] - 1) if start == "next"
                     else _fill("swap", axis=axis, **{"from": start, "to": to}))
        read[axis] = f"%s{axis}"
    value, yielded = [], "%read"
    if rewrite.negate:
        value.append(_fill("negate", element=element))
        yielded = "%value"
    if rewrite.replacement is not None:
        conditions = []
        for axis, position in rewrite.where:
            lines.append(_fill("at", axis=axis, position=position))
            conditions.append(f"%at{axis}")
        where = conditions[0]
        for number, condition in enumerate(conditions[1:]):
            lines.append(_fill("and", result=f"%where{number}", a=where, b=condition))
            where = f"%where{number}"
        constant = "0.0" if rewrite.replacement == "zero" else _NAN[element]
        value.append(_fill("replace", constant=constant, element=element, where=where))
        yielded = "%value"
    return _fill("rewrite", result=result, source=source, type=tensor, element=element,
                 map=render.affine_map(dims, dims), iterators=render.iterators(["parallel"] * len(shape)),
                 indices="\n".join(lines), read=", ".join(read), value="\n".join(value), yielded=yielded)


def _wrapper(mutation: Mutation, inner: str, signature: ir.FunctionType, attributes: list) -> str:
    inputs, results = list(signature.inputs), list(signature.results)
    arguments = [f"%a{n}" for n in range(len(inputs))]
    called, returned = list(arguments), [f"%r{n}" for n in range(len(results))]
    before, after = [], []
    rewrite = mutation.rewrite
    if rewrite is not None and rewrite.array[0] == "input":
        number = rewrite.array[1]
        before.append(_rewrite(f"%m{number}", arguments[number], ir.RankedTensorType(inputs[number]), rewrite))
        called[number] = f"%m{number}"
    if rewrite is not None and rewrite.array[0] == "result":
        number = rewrite.array[1]
        after.append(_rewrite("%mutated", returned[number], ir.RankedTensorType(results[number]), rewrite))
        returned[number] = "%mutated"
    result_types = ", ".join(map(str, results))
    return _fill("wrapper", name=mutation.name, inner=inner,
                 arguments=", ".join(f"{a}: {t}" + ("" if attrs == "{}" else f" {attrs}")
                                     for a, t, attrs in zip(arguments, inputs, attributes)),
                 result_types=result_types if len(results) == 1 else f"({result_types})",
                 before="\n".join(before), after="\n".join(after),
                 results=", ".join(f"%r{n}" for n in range(len(results))), call_arguments=", ".join(called),
                 argument_types=", ".join(map(str, inputs)), returned=", ".join(returned),
                 returned_types=result_types)


UNMUTATED = Mutation("unmutated")


def module(problem, mutations) -> compiler.ModuleSpec:
    """One CPU module of ``problem`` holding a public function per mutation (named ``mutation.name``) and
    ``unmutated``, each with the signature of ``problem``'s own function; the right function, private, is
    inlined into each (a padding mutation's into its own)."""
    context = ir.Context()
    inners, functions, signature = {}, [], None
    for mutation in (UNMUTATED, *mutations):
        key = mutation.inner or problem
        if key not in inners:
            text, signature_of, attributes = _private(rendered(key), f"original_{len(inners)}", context)
            inners[key] = (f"original_{len(inners)}", text)
            signature = signature or (signature_of, attributes)
        functions.append(_wrapper(mutation, inners[key][0], *signature))
    text = "\n\n".join([*(text for _, text in inners.values()), *functions]) + "\n"
    ir.Module.parse(text, context)  # parsed before it is compiled, as the project's tests do
    flags = policy.flags_for(problem, CPU, policy.forms_for(problem, CPU)[0])
    return compiler.ModuleSpec(f"mutations_{problem.name}", text, CPU, flags)


def compiled(spec: compiler.ModuleSpec) -> bytes:
    """The module compiled (or found in the cache), its bytes."""
    return compiler.find_or_compile(spec).read_bytes()


def function(spec: compiler.ModuleSpec, data: bytes, mutation: Mutation) -> runtime.Function:
    """The mutation's function of a compiled ``module``, loaded on the CPU through IREE's runtime."""
    return runtime.loaded_function(dataclasses.replace(spec, name=mutation.name), data, DEVICE,
                                   runtime.get_device(DEVICE))


def verdict(problem, loaded: runtime.Function) -> known_answer.Verdict:
    """The known-answer check of ``loaded`` as ``problem``'s module: ``known_answer.verify`` on the CPU."""
    return known_answer.verify(problem, lambda inputs, axes: arrays.known_run(loaded, problem, inputs, axes))


def whole(problem, loaded: runtime.Function, inputs: list) -> list:
    """``loaded``'s whole results on ``inputs``."""
    return arrays.known_run(loaded, problem, inputs).results


# --- The problems ------------------------------------------------------------------------------------------


def problems(dtype: str = "float32", channels_last: bool = True, scale: int = 1, source: str = "indices") -> dict:
    """One problem per operator, float32 by default: results above ``known_answer.WHOLE`` elements (or, for the
    weight gradient, reference work above ``known_answer.WORK``), so the check samples them; ``scale`` divides
    the spatial sizes (the rates' smoke run: a small problem, checked whole unless ``WHOLE`` is lowered);
    ``source``: what max-pool's backward reads (the forward's indices, or x)."""
    from ops.operators import avgpool3d, avgpool3d_fwd, conv_bwd_data, grouped_conv_bwd_data, grouped_conv_bwd_weight
    from ops.operators import maxpool2d, maxpool2d_fwd

    two, three = ("NHWC", "NDHWC") if channels_last else ("NCHW", "NCDHW")

    def sizes(*extents):
        return tuple(max(e // scale, 4) for e in extents)

    conv = dict(filter_spatial=(3, 3), stride=(2, 2), dilation=(1, 1), padding=((1, 1), (1, 1)), layout=two, dtype=dtype)
    pool = dict(kernel_size=3, stride=2, padding=1, dtype=dtype)
    return {problem.op: problem for problem in (
        conv_bwd_data.problem_from_params(batch=8, in_channels=16, out_channels=16, input_spatial=sizes(48, 48), **conv),
        grouped_conv_bwd_data.problem_from_params(
            batch=8, groups=2, in_channels=8, out_channels=8, input_spatial=sizes(48, 48), **conv,
            epilogue="where(d1 > 0, alpha * acc + d0, 0)", d_kinds=("channel", "full")),
        grouped_conv_bwd_weight.problem_from_params(batch=32, groups=2, in_channels=32, out_channels=32,
                                                    input_spatial=sizes(16, 16), **{**conv, "stride": (1, 1)}),
        maxpool2d.problem_from_params(batch=8, channels=16, input_spatial=sizes(64, 64), layout=two, source=source,
                                      **pool),
        avgpool3d.problem_from_params(batch=4, channels=16, input_spatial=sizes(18, 16, 16), layout=three, **pool),
        maxpool2d_fwd.problem_from_params(batch=8, channels=32, input_spatial=sizes(66, 66), layout=two, **pool),
        avgpool3d_fwd.problem_from_params(batch=4, channels=16, input_spatial=sizes(34, 32, 32), layout=three, **pool),
    )}


def chosen(problem) -> list:
    """Every applicable mutation of ``problem`` at positions its check keeps: a channel and a batch index kept at
    random (neither the first nor the last), a middle row, NaN at a kept position."""
    sample, axes = kept(problem), _roles(problem).results[0]
    shape = _shape(axes)

    def middle(axis):
        values = sample.get(axis, list(range(shape[axis])))
        return values[len(values) // 2] if len(values) > 2 else values[-1]

    made = [sign(problem), padding(problem), tap(problem)]
    for kind in ("channel", "row", "batch"):
        axis = axis_of(problem, kind)
        if axis is not None:
            made.append(build(problem, kind, (middle(axis),)))
    made.append(nan(problem, tuple(middle(axis) for axis in range(len(axes)))))
    return [m for m in made if m is not None]


def outside(problem) -> tuple:
    """A result position the check does not keep (the first sampled axis at a value it leaves out)."""
    sample, shape = kept(problem), _shape(_roles(problem).results[0])
    assert sample, f"{problem.name}: checked whole, every position kept"
    axis, values = next(iter(sample.items()))
    left_out = next(p for p in range(shape[axis]) if p not in values)
    return tuple(left_out if a == axis else shape[a] // 2 for a in range(len(shape)))
