"""The public functions, one per operator: each checks its arguments (the operator's ``normalize``), then ``run``s
the problem. NumPy arrays in give NumPy arrays out; IREE DeviceArrays in give DeviceArrays out.

``run`` is the one path every caller takes with a problem: the command line, the benchmarks, the tuner, the
tests and these functions. Nothing re-enters a public function.
"""

from __future__ import annotations

import warnings
from typing import Any

from .operators import avgpool3d as avgpool_bwd, conv_bwd_data as conv, grouped_conv_bwd_data as grouped_data
from .operators import avgpool3d_fwd as avgpool_fwd, grouped_conv_bwd_weight as grouped_weight, maxpool2d as maxpool_bwd
from .operators import maxpool2d_fwd as maxpool_fwd
from .validation import check_type


def run(problem, arrays: list, device: str | None = None, out=None, *, form: Any = None):
    """Run ``problem`` on ``arrays``: NumPy in, NumPy out; DeviceArrays (or ``out``) keep the results on the device.

    ``form`` replaces the target's choice of the template's form: the operator's ``Form``, or a dict of the keys to
    change in the target's first form (tests and the tuner try each).
    """
    from . import arrays as calls, registry  # the IREE runtime only when something runs

    results = registry.module(problem).results(problem)
    return calls.execute(problem, list(arrays), results=results, device=device, out=out, form=form)


def conv_bwd_data(grad_out, weight, *, input_shape, stride=1, padding=0, dilation=1, layout="NHWC", device=None, out=None,
                  precision="float32"):
    """Gradient of an N-D convolution with respect to its input.

    grad_out: ``(N, *out_spatial, K)`` for channels-last layouts (``NWC``, ``NHWC``, ``NDHWC``) or
    ``(N, K, *out_spatial)`` for PyTorch's (``NCW``, ``NCHW``, ``NCDHW``); weight: ``(K, *filter, C)``
    channels-last (CK's KYXC) or ``(K, C, *filter)`` channels-first (PyTorch's). ``input_shape`` is the
    forward input's full shape in the same layout. ``stride``/``dilation``: an int or one per spatial dim;
    ``padding``: an int, one per dim, or one ``(low, high)`` pair per dim.

    NumPy arrays in give a NumPy array out; IREE DeviceArrays in give a DeviceArray out (no host copy).
    ``device`` is an IREE driver name (``local-task`` by default; ``hip``, ``cuda``). ``out``, optional,
    is a DeviceArray of grad_in's shape and dtype that receives the result. ``precision="bf16x3"`` (float32, a
    one-tap filter with no padding, or stride 1 with padding within the filter's reach) computes each product as
    three bfloat16 products summed in float32, within about 2^-16 of its magnitude (as
    ``grouped_conv_bwd_weight``'s); ``precision="bf16x6"``, as six, within float32's rounding;
    ``precision="f16x1"``, as one float16 product of operands scaled by powers of two, TF32's precision (also
    of several taps at a stride above 1, one group: the stride phases of the scaled operands).
    """
    problem = conv.normalize(grad_out, weight, input_shape=input_shape, stride=stride, padding=padding, dilation=dilation,
                             layout=layout, precision=precision)
    return run(problem, [grad_out, weight], device, out)


def grouped_conv_bwd_data(grad_out, weight, ds=(), *, groups, input_shape, stride=1, padding=0, dilation=1,
                          epilogue=None, layout="NHWC", device=None, out=None, **params):
    """Gradient of a grouped N-D convolution with respect to its input, with a fused epilogue.

    Layouts as in ``conv_bwd_data``, groups folded into channels (PyTorch's and CK's NHWGC): channels-last
    grad_out ``(N, *out_spatial, G*K)``, weight ``(G*K, *filter, C)``, grad_in ``(N, *spatial, G*C)``;
    channels-first layouts are PyTorch's. ``epilogue``: ``None``, a name (``"add"``, ``"bilinear"``,
    ``"scale"``, ``"add_relu"``, ``"relu_grad"``) or an expression over ``acc``, ``d0``, ``d1``, ... and
    named float parameters given as keyword arguments, e.g. ``"where(d1 > 0, acc + d0, 0) * alpha"``.
    """
    problem, values = grouped_data.normalize(grad_out, weight, ds, groups=groups, input_shape=input_shape, stride=stride,
                                padding=padding, dilation=dilation, epilogue=epilogue, layout=layout, params=params)
    return run(problem, [grad_out, weight, *ds, *([] if values is None else [values])], device, out)


def _renamed(op: str, new: str, value, old: str, old_value):
    """The value of parameter ``new`` of ``op``, which was called ``old`` (accepted for a release, with a
    DeprecationWarning at the caller's line); None for neither, and a TypeError for both."""
    if old_value is None:
        return value
    check_type(value is None, f"{op}: got both {new}= and {old}= (its former name); pass {new}= only")
    warnings.warn(f"{op}: {old}= is deprecated and will be removed; use {new}= (the same value)", DeprecationWarning,
                  stacklevel=3)
    return old_value


def grouped_conv_bwd_weight(x, grad_out, *, groups, filter_spatial=None, stride=1, padding=0, dilation=1,
                            layout="NHWC", out_dtype=None, device=None, out=None, kernel_size=None, precision="float32"):
    """Gradient of a grouped N-D convolution with respect to its weight.

    x: ``(N, *spatial, G*C)`` channels-last (``NWC``, ``NHWC``, ``NDHWC``; CK's NHWGC) or ``(N, G*C, *spatial)``
    (PyTorch's ``NCW``, ``NCHW``, ``NCDHW``); grad_out: ``(N, *out_spatial, G*K)`` or ``(N, G*K, *out_spatial)``.
    Returns grad_w ``(G*K, *filter_spatial, C)`` channels-last (CK's GKYXC with G, K merged) or
    ``(G*K, C, *filter_spatial)`` channels-first (PyTorch's). ``groups``: G (1 for an ordinary convolution, G*C for
    depthwise); ``filter_spatial``: the filter's spatial size (PyTorch's ``kernel_size``), an int or one per spatial
    dim; ``stride``/``dilation``: an int or one per spatial dim; ``padding``: an int, one per dim, or one
    ``(low, high)`` pair per dim. x and grad_out share a dtype (float32, float16, bfloat16); the sums run in
    float32 and grad_w comes back in ``out_dtype``: the inputs' dtype by default, or float32 (as CK's bf16 kernel).

    NumPy arrays in give a NumPy array out; IREE DeviceArrays in give a DeviceArray out. ``device`` is an IREE
    driver name (``local-task`` by default; ``hip``, ``cuda``); ``out``, optional, is a DeviceArray of grad_w's
    shape and dtype that receives the result. ``kernel_size``: ``filter_spatial``'s former name (deprecated).
    ``precision="bf16x3"`` (float32 x, grad_out and grad_w only) computes each product as three bfloat16 products
    summed in float32 (each within about 2^-16 of its magnitude, where TF32's is 2^-11): on GPUs without float32
    matrix units, several times faster (``ops.torch`` chooses it for grouped problems where PyTorch allows TF32);
    ``precision="f16x1"`` as one float16 product of x and grad_out each scaled by the power of two that puts its
    largest magnitude in [2^14, 2^15), TF32's 11 significant bits (``ops.torch`` chooses it for the others);
    ``precision="bf16x6"`` as six bfloat16 products (three parts of each value, ``problem.SPLIT_PRODUCTS``), within
    float32's rounding (``ops.torch`` chooses it on CUDA where PyTorch allows no TF32 and ``OPS_FLOAT32=bf16x6``).
    """
    filter_spatial = _renamed("grouped_conv_bwd_weight", "filter_spatial", filter_spatial, "kernel_size", kernel_size)
    check_type(filter_spatial is not None, "grouped_conv_bwd_weight: missing the keyword argument filter_spatial "
                                           "(the filter's spatial size)")
    problem = grouped_weight.normalize(
        x, grad_out, groups=groups, filter_spatial=filter_spatial, stride=stride, padding=padding, dilation=dilation,
        layout=layout, out_dtype=out_dtype, precision=precision,
    )
    return run(problem, [x, grad_out], device, out)


def maxpool2d_fwd(x, *, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, input_activation=None,
                  layout="NHWC", device=None, out=None):
    """2-D max pooling with PyTorch's indices: ``(y, indices)``.

    x: ``(N, H, W, C)`` (``NHWC``) or ``(N, C, H, W)`` (``NCHW``); y and indices (int64, the flat position
    ``h*W + w`` of each window's maximum inside its (n, c) plane) have the output's shape in the same layout.
    ``kernel_size``/``stride`` (default: the kernel size)/``dilation``: an int or one per spatial dim;
    ``padding``: an int, one per dim, or ``(low, high)`` pairs, each at most ``kernel_size // 2``.
    ``input_activation="relu"`` pools relu(x), each tap through the ReLU as it is read (PyTorch's values and
    indices of ``max_pool2d(relu(x))``). ``out``, optional: a pair of DeviceArrays (y, indices) for the results.
    """
    problem = maxpool_fwd.normalize(x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                        ceil_mode=ceil_mode, layout=layout, input_activation=input_activation)
    return run(problem, [x], device, out)


def maxpool2d_bwd(grad_out, *, input_shape, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                  indices=None, x=None, output=None, layout="NHWC", device=None, out=None):
    """Gradient of 2-D max pooling with respect to its input.

    grad_out: one value per window, in ``layout``; ``input_shape``: the forward input's full shape. Give
    exactly one of ``indices`` (maxpool2d_fwd's, int64 or int32) or ``x`` (the forward input: the argmax is
    recomputed with the forward's rules). Each window's gradient goes to its argmax; overlapping windows
    add up. ``output``, optional: where the pooled input was a ReLU's output, the forward's output (grad_out's
    shape and dtype); grad_in is then the gradient at the ReLU's input, zero where the ReLU's output is <= 0
    (PyTorch's ReLU backward: at a window's argmax that output is the window's, as max(relu(x)) = relu(max(x))).
    Other parameters as in :func:`maxpool2d_fwd`. ``out``, optional: a DeviceArray for grad_in.
    """
    problem = maxpool_bwd.normalize(grad_out, input_shape=input_shape, kernel_size=kernel_size, stride=stride, padding=padding,
                        dilation=dilation, ceil_mode=ceil_mode, indices=indices, x=x, layout=layout, output=output)
    source = indices if indices is not None else x
    return run(problem, [grad_out, source] + ([] if output is None else [output]), device, out)


def avgpool3d_fwd(x, *, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, count_include_pad=True,
                  divisor_override=None, input_activation=None, layout="NDHWC", device=None, out=None):
    """3-D average pooling: ``torch.nn.functional.avg_pool3d(x, ...)``.

    x: ``(N, D, H, W, C)`` (``NDHWC``) or ``(N, C, D, H, W)`` (``NCDHW``); y has the output's shape in the same
    layout. Parameters as in :func:`avgpool3d_bwd`. ``input_activation="relu"`` pools relu(x), each tap through the
    ReLU as it is read. ``out``, optional: a DeviceArray for y.
    """
    problem = avgpool_fwd.normalize(x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                                    ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                                    divisor_override=divisor_override, layout=layout, input_activation=input_activation)
    return run(problem, [x], device, out)


def avgpool3d_bwd(grad_out, *, input_shape, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                  count_include_pad=True, divisor_override=None, relu_output=None, layout="NDHWC", device=None, out=None):
    """Gradient of 3-D average pooling with respect to its input.

    grad_out: one value per window, ``(N, OD, OH, OW, C)`` (``NDHWC``) or ``(N, C, OD, OH, OW)`` (``NCDHW``);
    ``input_shape``: the forward input's full shape in the same layout. ``kernel_size``/``stride`` (default:
    the kernel size)/``dilation`` (CK's extension): an int or one per spatial dim; ``padding``: an int, one per
    dim, or ``(low, high)`` pairs, each at most ``kernel_size // 2``. ``ceil_mode``, ``count_include_pad`` and
    ``divisor_override`` as in PyTorch. ``relu_output``, optional: where the pooled input was a ReLU's output,
    that output (``input_shape``, grad_out's dtype), or the ReLU's input, which is <= 0 at the same positions
    (``ops.torch`` passes the input); grad_in is then the gradient at the ReLU's input, zero where the output is
    <= 0 (PyTorch's ReLU backward). ``out``, optional: a DeviceArray of grad_in's shape and
    dtype.
    """
    problem = avgpool_bwd.normalize(grad_out, input_shape=input_shape, kernel_size=kernel_size, stride=stride, padding=padding,
                        dilation=dilation, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                        divisor_override=divisor_override, layout=layout, relu_output=relu_output)
    return run(problem, [grad_out] if relu_output is None else [grad_out, relu_output], device, out)
