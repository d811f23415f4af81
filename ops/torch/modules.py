"""The ``torch.nn`` twins (``Conv1d``..``Conv3d``, ``MaxPool2d``, ``AvgPool3d``) and ``convert``, which swaps a model's
layers for them in place (and fuses a ReLU into the convolution or pooling that follows it)."""

from __future__ import annotations

import warnings

import torch.nn.functional as F
from torch import nn

from ..validation import check_activation, check_type
from .functional import avg_pool3d, convolution, max_pool2d
from .plans import KERNEL_DTYPES


class _InputActivation:
    """A twin's ``input_activation``: ``"relu"``, the layer takes relu(x), the ReLU inside its kernels."""

    input_activation = None

    def __init__(self, *args, input_activation=None, **kwargs):
        super().__init__(*args, **kwargs)
        check_activation(type(self).__name__, input_activation)
        self.input_activation = input_activation

    def extra_repr(self):
        text = super().extra_repr()
        return text + (f", input_activation={self.input_activation!r}" if self.input_activation else "")


class _ConvForward(_InputActivation):
    """``_conv_forward`` of the convolution twins: PyTorch's module arguments, this library's backward."""

    def _conv_forward(self, input, weight, bias):
        padding = self.padding
        if self.padding_mode != "zeros":  # as PyTorch does: pad first (PyTorch's F.pad), then no padding
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = 0
        return convolution(self._rank, input, weight, bias, self.stride, padding, self.dilation, self.groups,
                           self.input_activation)


class Conv1d(_ConvForward, nn.Conv1d):
    """``torch.nn.Conv1d`` with this library's backward; ``input_activation="relu"`` fuses a preceding ReLU."""

    _rank = 1


class Conv2d(_ConvForward, nn.Conv2d):
    """``torch.nn.Conv2d`` with this library's backward; ``input_activation="relu"`` fuses a preceding ReLU."""

    _rank = 2


class Conv3d(_ConvForward, nn.Conv3d):
    """``torch.nn.Conv3d`` with this library's backward; ``input_activation="relu"`` fuses a preceding ReLU."""

    _rank = 3


class MaxPool2d(_InputActivation, nn.MaxPool2d):
    """``torch.nn.MaxPool2d`` whose forward and backward are this library's; ``input_activation="relu"`` fuses a
    preceding ReLU."""

    def forward(self, input):
        return max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices, self.input_activation)


class AvgPool3d(_InputActivation, nn.AvgPool3d):
    """``torch.nn.AvgPool3d`` whose forward and backward are this library's; ``input_activation="relu"`` fuses a
    preceding ReLU."""

    def forward(self, input):
        return avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                          self.divisor_override, self.input_activation)


_TWINS = {nn.Conv1d: Conv1d, nn.Conv2d: Conv2d, nn.Conv3d: Conv3d, nn.MaxPool2d: MaxPool2d, nn.AvgPool3d: AvgPool3d}
# layers of the families this library covers that it cannot take: named in convert's warning
_FAMILIES = (nn.modules.conv._ConvNd, nn.modules.pooling._MaxPoolNd, nn.modules.pooling._AvgPoolNd)


def _why_not(module: nn.Module) -> str | None:
    """Why ``module`` stays PyTorch's, or None if its twin can take it."""
    if type(module) not in _TWINS:
        return f"{type(module).__name__} has no kernel here"
    dtypes_ = {p.dtype for p in module.parameters(recurse=False)}
    if dtypes_ - set(KERNEL_DTYPES):
        return f"{', '.join(sorted(str(d) for d in dtypes_ - set(KERNEL_DTYPES)))} parameters"
    return None


def convert(model: nn.Module) -> nn.Module:
    """Swap every supported layer of ``model`` for its twin, in place, and return ``model``.

    ``nn.Conv1d/2d/3d``, ``nn.MaxPool2d`` and ``nn.AvgPool3d`` (exactly those classes, not subclasses, which
    may change ``forward``) become this module's twins: the same object, parameters and ``state_dict`` (an
    optimizer made before keeps working). Inside ``nn.Sequential``, a ``ReLU`` directly followed by a
    convolution, a ``MaxPool2d`` or an ``AvgPool3d`` becomes ``nn.Identity`` and that layer takes
    ``input_activation="relu"``, except an in-place ``ReLU`` that opens the Sequential (its input may have other
    readers, which in-place would have changed), and a ``MaxPool2d`` that ends the Sequential or is followed by
    an in-place module (its backward reads its output, which must not change before it). Layers of these families
    it cannot take (another class, float64 parameters) stay PyTorch's, and one warning lists them.
    """
    check_type(isinstance(model, nn.Module), f"convert: model must be a torch.nn.Module, but got {type(model).__name__}")
    left = []
    for name, module in model.named_modules():
        if isinstance(module, _FAMILIES) and not isinstance(module, tuple(_TWINS.values())):
            reason = _why_not(module)
            if reason is None:
                module.__class__ = _TWINS[type(module)]
            else:
                left.append(f"{name or '(the model)'} ({reason})")
    for module in model.modules():
        if isinstance(module, nn.Sequential):
            _fuse_relus(module)
    if left:
        warnings.warn(f"ops.torch.convert: these layers stay PyTorch's: {'; '.join(left)}", stacklevel=2)
    return model


def _fuse_relus(sequential: nn.Sequential) -> None:
    modules = list(sequential._modules.items())
    for position, ((name, relu), (_, layer)) in enumerate(zip(modules, modules[1:])):
        if (type(relu) is nn.ReLU and isinstance(layer, _InputActivation) and layer.input_activation is None
                and not (position == 0 and relu.inplace) and _output_kept(layer, modules[position + 2:])):
            layer.input_activation = "relu"
            sequential._modules[name] = nn.Identity()


def _output_kept(layer: nn.Module, after: list) -> bool:
    """Whether ``layer``'s output stays as it was until the backward, where its fused ReLU's backward needs it (a
    max pooling's: the ReLU's output at each argmax): the next module of the Sequential is there and changes
    nothing in place (``inplace`` False), so the output does not leave the Sequential for code that might."""
    if not isinstance(layer, MaxPool2d):
        return True
    return bool(after) and not getattr(after[0][1], "inplace", False)
