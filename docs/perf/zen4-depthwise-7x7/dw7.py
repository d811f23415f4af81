"""Channels-first depthwise weight gradients at 7x7 (49 output positions): taps against the named depthwise op, Zen 4."""
import torch
from build_tools import form_bench as fb
from ops.operators import grouped_conv_bwd_weight as W
torch.set_num_threads(2)
host = fb.host_for("torch")
print(fb.host_line(7), flush=True)
for n in (2, 4, 8):
    for g, f in ((960, 3), (1152, 3), (1152, 5), (576, 3), (320, 3)):
        p = W.problem_from_params(batch=n, groups=g, in_channels=1, out_channels=1, input_spatial=(7, 7), filter_spatial=(f, f), padding=f // 2, layout="NCHW", dtype="float32")
        print(fb.line(fb.compare(p, host, 7, ("depthwise", "taps"))), flush=True)
