"""Backward operators of Composable Kernel's examples as linalg MLIR, compiled by IREE, called from NumPy.

    import ops
    grad_in = ops.conv_bwd_data(grad_out, weight, input_shape=x.shape, stride=2, padding=1)

Importing ``ops`` loads no IREE module: the runtime comes with the first call (or ``ops.to_device``), so the
problem algebra, the templates and their tests need neither.
"""

from .compiler import CompileError, DamagedModuleError, MissingModuleError
# the launch-plan store joins the compiler's HAL program readers, so that every compile stores its module's plan
from .launch import store as plan_store  # noqa: F401
from .api import avgpool3d_bwd, avgpool3d_fwd, conv_bwd_data, grouped_conv_bwd_data, grouped_conv_bwd_weight
from .api import maxpool2d_bwd, maxpool2d_fwd


def to_device(array, device: str = "local-task"):
    """Copy a NumPy array to ``device`` once, for chaining calls without host round trips."""
    from . import runtime

    return runtime.to_device(array, device)


__all__ = [
    "conv_bwd_data",
    "grouped_conv_bwd_data",
    "grouped_conv_bwd_weight",
    "maxpool2d_fwd",
    "maxpool2d_bwd",
    "avgpool3d_fwd",
    "avgpool3d_bwd",
    "to_device",
    "CompileError",
    "MissingModuleError",
    "DamagedModuleError",
]
