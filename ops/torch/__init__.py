"""The backward operators inside ``torch.autograd``: functions, ``torch.nn`` twins, ``convert`` and ``precompile``.

    import ops.torch as otorch                 # needs PyTorch: pip install -e ".[torch]"
    y = otorch.conv2d(x, weight, bias, stride=2, padding=1, groups=4, input_activation="relu")
    model = otorch.convert(model)              # nn.Conv*d, nn.MaxPool2d, nn.AvgPool3d -> these twins

Forward passes of convolution are PyTorch's own; the pooling forwards are ours (``maxpool2d_fwd`` makes the
indices its backward reads; ``avgpool3d_fwd``). Every backward is ours: ``grad_input`` by ``conv_bwd_data`` (one
group) or ``grouped_conv_bwd_data`` (several, or a fused ReLU), ``grad_weight`` by ``grouped_conv_bwd_weight``,
``grad_bias`` as the sum of ``grad_output``, pooling by ``maxpool2d_bwd`` / ``avgpool3d_bwd`` (a ReLU before either
fused, as before a convolution). Only the gradients autograd asks for are computed.

The PyTorch-facing API:
- ``functional.py``: ``conv1d/2d/3d``, ``max_pool2d``, ``avg_pool3d`` and their argument checks;
- ``modules.py``: the ``torch.nn`` twins and ``convert``;
- ``precompiling.py``: ``precompile``.

How a call runs:
- ``kernels.py``: each kernel is an operator of the ``iree_ck`` library (``torch.library.Library``, so
  ``torch.compile(fullgraph=True)`` traces it), with a fake implementation for shapes and ``register_autograd``
  for its gradient; eager calls on plain tensors skip the dispatcher. PyTorch's own kernels serve a problem no
  compiled form computes right.
- ``plans.py``: one generic *plan* per call — the tensors in the layout the kernel takes, the destinations, the
  frozen problem (the registry's operator's ``normalize``) — shared by the real and the fake implementation,
  with one small ``Kind`` per kernel op. ``contiguous_format`` maps to the channels-first layouts
  (NCW/NCHW/NCDHW), ``channels_last``/``channels_last_3d`` to NHWC/NDHWC as a permuted view (no copy); other
  strides get one ``contiguous()``. Results are written in place into tensors PyTorch allocated.
- ``calls.py``: the real implementation runs the plan once per call signature and keeps the result as a ready
  call; stream order, devices and the launch itself (on CUDA, a module's launch plan on PyTorch's current stream,
  nothing waited for; on the CPU and ROCm, IREE's runtime, synchronously).
"""

try:
    import torch  # noqa: F401
except ModuleNotFoundError as error:  # the extra: PyTorch is not a dependency of the NumPy API
    raise ModuleNotFoundError(
        "ops.torch needs PyTorch, which is not installed: pip install 'iree-ck-backward-ops[torch]' "
        "(or pip install -e \".[torch]\" in a checkout)", name="torch") from error

from .functional import avg_pool3d, conv1d, conv2d, conv3d, max_pool2d
from .modules import AvgPool3d, Conv1d, Conv2d, Conv3d, MaxPool2d, convert
from .precompiling import precompile

__all__ = [
    "conv1d", "conv2d", "conv3d", "max_pool2d", "avg_pool3d",
    "Conv1d", "Conv2d", "Conv3d", "MaxPool2d", "AvgPool3d",
    "convert", "precompile",
]
