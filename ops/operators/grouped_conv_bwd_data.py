"""Grouped convolution backward-data with fused elementwise "D" tensors (CK example ``38_grouped_conv_bwd_data_multiple_d``).

``grad_in = f(acc, d0, d1, ...)`` where ``acc`` is the grouped backward-data result in float32 and the
``ds`` broadcast (NumPy rules) to grad_in's shape. The convolution is ``conv_bwd_data``'s stride-phase form
(``mlir/conv_bwd_data.mlir``); this module adds what each phase's store fuses: the D tensors, read at the phase's
rows, and ``f`` (``ops/epilogue.py``), so an epilogue costs no extra pass over grad_in. The module's function takes
(grad_out, weight, d0, d1, ..., params, dst): the epilogue's named parameters as one float32 vector.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .. import dtypes, sweep_params, epilogue as epilogues
from .. import epilogue_mlir
from .. import render as mlir
from ..operator import Lowering
from ..layouts import LAYOUTS, activation_from_params
from ..problem import ConvBwdDataProblem
from ..problem_checks import array_shape_dtype, check_dtype
from ..validation import check, check_type
from . import conv_bwd_data as conv, data_merged, stride_phases

OP = "grouped_conv_bwd_data"
Problem = ConvBwdDataProblem
Form = stride_phases.Form
results = conv.results

# parameter values the command line, the benchmarks and the tests' random inputs use (others: 1.0)
_PARAMETER_DEFAULTS = {"alpha": 0.5, "beta": 2.0}


def normalize(grad_out, weight, ds, *, groups, input_shape, stride, padding, dilation, epilogue, layout, params):
    """Check every argument (D shapes and the epilogue too) before anything is compiled.

    Returns the problem and the module's parameter vector (float32, in ``epilogue_params`` order; None without
    parameters).
    """
    check_type(
        isinstance(ds, (tuple, list)),
        f"{OP}: ds must be a tuple of arrays (d0, d1, ...), but got {type(ds).__name__}",
    )
    plain = conv.normalize(grad_out, weight, input_shape=input_shape, stride=stride, padding=padding,
                           dilation=dilation, layout=layout, groups=groups, op=OP)
    d_shapes, d_dtypes = [], []
    for j, d in enumerate(ds):
        shape, dtype = array_shape_dtype(OP, f"ds[{j}]", d)
        check_dtype(OP, f"ds[{j}]", dtype)
        try:
            broadcast = np.broadcast_shapes(shape, plain.input_shape)
        except ValueError:
            broadcast = None
        check(
            broadcast == plain.input_shape,
            f"{OP}: ds[{j}] has shape {shape}, which does not broadcast to grad_in's shape {plain.input_shape}",
        )
        d_shapes.append(shape)
        d_dtypes.append(dtype)
    parsed, values = epilogues.parse(OP, epilogue, len(ds), params)
    problem = dataclasses.replace(plain, epilogue=parsed, d_shapes=tuple(d_shapes), d_dtypes=tuple(d_dtypes))
    return problem, (np.asarray(values, dtype=np.float32) if values else None)


# --- What each phase's store fuses ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _DView:
    """A D tensor with its broadcast dims collapsed away, and its channel dim split into (G, C) if it has one.

    ``roles`` name each dim of the split view: "n", "g", "c", or the spatial axis number.
    """

    lines: str
    kept: str          # value with broadcast dims collapsed (grad_in's dims, the ones D really has)
    kept_type: str
    kept_roles: list
    split: str         # ``kept`` with the channel dim as (G, C)
    split_type: str
    split_shape: list
    roles: list


def _d_view(j: int, problem: ConvBwdDataProblem) -> _DView:
    shape, element = problem.d_shapes[j], dtypes.mlir_element_type(problem.d_dtypes[j])
    rank, groups, c = problem.rank, problem.groups, problem.in_channels
    grad_in_roles = ["n", *range(rank), "channel"] if problem.channels_last else ["n", "channel", *range(rank)]
    aligned = grad_in_roles[len(grad_in_roles) - len(shape):]
    kept = [(role, size) for role, size in zip(aligned, shape) if size != 1]
    kept_shape = [size for _, size in kept]
    lines = []
    value, value_type = f"%d{j}", f"!d{j}"
    if len(kept) != len(shape):
        # group each broadcast (size-1) dim with the next kept dim, trailing ones with the last
        groups_of_dims, pending = [], []
        for position, size in enumerate(shape):
            pending.append(position)
            if size != 1:
                groups_of_dims.append(pending)
                pending = []
        if pending and groups_of_dims:
            groups_of_dims[-1] += pending
        kept_type = mlir.tensor(kept_shape, element)
        lines.append(mlir.render("common.collapse", result=f"%d{j}_kept", source=f"%d{j}", reassociation=groups_of_dims,
                                   source_type=f"!d{j}", result_type=kept_type))
        value, value_type = f"%d{j}_kept", kept_type
    kept_roles = [role for role, _ in kept]
    split, split_type, split_shape, roles = value, value_type, kept_shape, kept_roles
    if "channel" in kept_roles:
        at = kept_roles.index("channel")
        split_shape = kept_shape[:at] + [groups, c] + kept_shape[at + 1:]
        roles = kept_roles[:at] + ["g", "c"] + kept_roles[at + 1:]
        reassociation = [[i] for i in range(at)] + [[at, at + 1]] + [[i + 1] for i in range(at + 1, len(kept_shape))]
        split, split_type = f"%d{j}_split", mlir.tensor(split_shape, element)
        lines.append(mlir.render("common.expand", result=split, source=value, reassociation=reassociation,
                                   shape=mlir.index_list(split_shape), source_type=value_type, result_type=split_type))
    return _DView(mlir.indent("\n".join(lines), 2), value, value_type, kept_roles, split, split_type, split_shape, roles)


class _Fusion(stride_phases.Fusion):
    """The D tensors and the epilogue, fused into every store of the stride-phase form."""

    def __init__(self, problem: ConvBwdDataProblem):
        self.problem = problem
        self.epilogue = problem.epilogue is not None
        self.views = [_d_view(j, problem) for j in range(len(problem.d_shapes))]

    def declarations(self) -> tuple[str, str, str]:
        problem, params = self.problem, self.problem.epilogue_params
        aliases = "".join(
            f"!d{j} = {mlir.tensor(shape, dtypes.mlir_element_type(t))}\n"
            for j, (shape, t) in enumerate(zip(problem.d_shapes, problem.d_dtypes))
        ) + (f"!params = tensor<{len(params)}xf32>\n" if params else "")
        arguments = "".join(f", %d{j}: !d{j}" for j in range(len(problem.d_shapes))) + (", %params: !params" if params else "")
        return aliases, arguments, "\n".join(v.lines for v in self.views if v.lines)

    def operands(self, index_of: dict, phase=None, index: int | None = None, d_read: str = "slice") -> stride_phases.Operands:
        """Without ``phase``: the views as grad_in has them. With ``phase``, the views with the channel dim as
        (G, C), read at the phase's rows either by a strided slice (``d_read="slice"``: a view, and every indexing
        map stays a projected permutation) or by the store's indexing map (``"map"``: ``index_of`` gives spatial
        roles as ``s*m + offset``, see ``stride_phases.Form``)."""
        problem, values, types, block_args, indices, lines = self.problem, [], [], [], [], []
        for j, view in enumerate(self.views):
            element = dtypes.mlir_element_type(problem.d_dtypes[j])
            if phase is None:
                value, value_type, roles = view.kept, view.kept_type, view.kept_roles
            elif d_read == "map" or not any(isinstance(r, int) for r in view.roles):
                value, value_type, roles = view.split, view.split_type, view.roles
            else:
                roles = view.roles
                sizes = [phase[r].rows if isinstance(r, int) else size for r, size in zip(roles, view.split_shape)]
                value, value_type = f"%d{j}_phase_{index}", mlir.tensor(sizes, element)
                lines.append(mlir.render(
                    "common.slice", result=value, source=view.split, source_type=view.split_type, result_type=value_type,
                    offsets=mlir.index_list([phase[r].grad_in_offset if isinstance(r, int) else 0 for r in roles]),
                    sizes=mlir.index_list(sizes),
                    strides=mlir.index_list([problem.stride[r] if isinstance(r, int) else 1 for r in roles]),
                ))
            values.append(value)
            types.append(value_type)
            block_args.append(f"%d{j}_value: {element}")
            indices.append([index_of[r] for r in roles])
        return stride_phases.Operands(values, types, block_args, indices, mlir.indent("\n".join(lines), 2))

    def body(self, acc: str) -> tuple[list[str], str]:
        """D values to f32, the parameters read, then the epilogue."""
        problem, lines, operands = self.problem, [], {"acc": acc}
        for j, d_dtype in enumerate(problem.d_dtypes):
            widen, operands[f"d{j}"] = mlir.widen(f"%d{j}_value", dtypes.mlir_element_type(d_dtype), f"%d{j}_f32")
            if widen:
                lines.append(mlir.indent(widen, 4))
        for position, name in enumerate(problem.epilogue_params):
            text, operands[name] = epilogue_mlir.parameter(name, position)
            lines.append(mlir.indent(text, 4))
        if problem.epilogue is None:
            return lines, acc
        body, value = epilogue_mlir.emit(problem.epilogue.root, operands)
        return lines + ["    " + line for line in body], value


def render(problem: ConvBwdDataProblem, form: Form = Form(), lowering: Lowering = Lowering()) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, weight, d0.., params, dst): the stride
    phases, or every phase in one generic (the merged form, ``data_merged``, grad_out padded or read in place; its
    contraction pinned to ``lowering.configs[0]`` where given)."""
    if form.contraction == "merged":
        return data_merged.render(problem, mlir.transients(lowering.transients), lowering.configs.get(0),
                                  in_place=form.grad_out_read == "in_place")
    return stride_phases.render_module(problem, form, lowering, _Fusion(problem))


# --- Problems from parameters, inputs and reference for the command line, the benchmarks and the tests ---------

# the sweep's epilogues, each with the kinds of its D tensors
_RANDOM_EPILOGUES = [(None, ()), ("add", ("full",)), ("add_relu", ("channel",)), ("bilinear", ("full",)),
                     ("where(d1 > 0, acc + d0, 0) * alpha", ("channel", "full"))]


def random_params(rng, rank: int) -> dict:
    """The compile sweep's parameters: a convolution, and one of five epilogues."""
    epilogue, kinds = _RANDOM_EPILOGUES[int(rng.integers(5))]
    return {**sweep_params.conv_params(rng, rank), "epilogue": epilogue, "d_kinds": kinds}


def problem_from_params(*, groups, epilogue=None, d_kinds=(), **params) -> ConvBwdDataProblem:
    """A problem from CK-style parameters; ``d_kinds`` lists each D tensor as ``"full"`` or ``"channel"``."""
    names = epilogues.parameter_names(OP, epilogue) if epilogue else ()
    parsed, _ = epilogues.parse(OP, epilogue, len(d_kinds), {name: 1.0 for name in names})
    channels, layout = groups * params["in_channels"], params.get("layout", "NHWC")
    grad_in = activation_from_params(params["batch"], params["input_spatial"], channels, layout)
    # a per-channel D (a bias) broadcast against grad_in: (G*C,) channels-last, (G*C, 1, ..) channels-first
    channel = (channels,) if LAYOUTS.get(layout, (0, True))[1] else (channels, *([1] * len(params["input_spatial"])))
    d_shapes = tuple(grad_in if kind == "full" else channel for kind in d_kinds)
    return conv.problem_from_params(**params, groups=groups, op=OP, epilogue=parsed, d_shapes=d_shapes,
                                    d_dtypes=(params.get("dtype", "float16"),) * len(d_shapes))


def random_inputs(problem: ConvBwdDataProblem, rng) -> list:
    """grad_out, weight, the D tensors, then the parameter vector (alpha 0.5, beta 2, others 1)."""
    ds = [dtypes.random_normal(rng, shape, t) for shape, t in zip(problem.d_shapes, problem.d_dtypes)]
    values = [_PARAMETER_DEFAULTS.get(name, 1.0) for name in problem.epilogue_params]
    return conv.random_inputs(problem, rng) + ds + ([np.asarray(values, dtype=np.float32)] if values else [])


def param_values(problem: ConvBwdDataProblem, inputs: list) -> dict:
    """The epilogue's parameters by name, from the module function's arguments ``inputs``."""
    names = problem.epilogue_params
    return dict(zip(names, np.asarray(inputs[-1], np.float64).tolist())) if names else {}


def reference(problem: ConvBwdDataProblem, inputs) -> np.ndarray:
    """float64: the direct-definition grouped backward-data, then the epilogue evaluated by NumPy."""
    acc = conv.reference(problem, inputs[:2])
    if problem.epilogue is None:
        return acc
    ds = inputs[2:2 + len(problem.d_shapes)]
    values = {"acc": acc, **{f"d{j}": np.asarray(d, np.float64) for j, d in enumerate(ds)}, **param_values(problem, inputs)}
    return np.broadcast_to(epilogues.evaluate(problem.epilogue.root, values), acc.shape)


# --- The known-answer check's hooks (ops/known_answer.py): the convolution's, plus the epilogue's term ----------

terms = conv.terms
roles = conv.roles


def magnitudes(problem: ConvBwdDataProblem, inputs: list, values: list) -> list:
    """The convolution's sum of term magnitudes, plus |f(acc, d..)| where an epilogue adds its own terms."""
    if problem.epilogue is None:
        return conv.magnitudes(problem, inputs, values)
    return [conv.magnitudes(problem, inputs, values)[0] + np.abs(values[0])]
