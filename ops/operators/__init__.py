"""The operators, one module each, on the protocol of ``ops/operator.py``."""

from . import avgpool3d, conv_bwd_data, grouped_conv_bwd_data, grouped_conv_bwd_weight, maxpool2d, maxpool2d_fwd

OPERATORS = {module.OP: module for module in (
    conv_bwd_data, grouped_conv_bwd_data, grouped_conv_bwd_weight, maxpool2d, avgpool3d, maxpool2d_fwd,
)}
