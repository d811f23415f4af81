"""Backward operators of Composable Kernel's examples as linalg MLIR, compiled by IREE, called from NumPy.

    import ops
    grad_in = ops.conv_bwd_data(grad_out, weight, input_shape=x.shape, stride=2, padding=1)
"""

from .compiler import CompileError, MissingModuleError
from .operators.conv_bwd_data import conv_bwd_data
from .runtime import to_device

__all__ = ["conv_bwd_data", "to_device", "CompileError", "MissingModuleError"]
