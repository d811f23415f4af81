"""Issue 45's probe: how fast would a float32 weight gradient be as bfloat16 x 3 on a GPU?

A float32 x splits as hi = bf16(x), lo = bf16(x - hi); x*g ~ hi_x*hi_g + hi_x*lo_g + lo_x*hi_g, which is one
bfloat16 weight gradient over three times the batch (x: [hi, hi, lo], grad_out: [hi, lo, hi]) with a float32
grad_w. This times, for ResNet-50's weight-gradient layers at batch 32, our float32 NCHW module, the bfloat16
module of batch 96 with a float32 result in NCHW and NHWC, the plain bfloat16 NHWC module, and cuDNN (FP32, TF32,
bfloat16 channels-last). The kernels run as ops.torch runs them (the CUDA launcher, checked on first use).

    OPS_CACHE_DIR=.gpu/cache python -m build_tools.split_probe prepare     # here: compile every form for sm_80
    OPS_CACHE_DIR=$PWD/.gpu/cache python -m build_tools.split_probe run    # on the GPU
"""
import sys
import numpy as np
from ops import compiler, policy, targets, known_answer
from ops.operators import grouped_conv_bwd_weight as bw

CUDA = targets.parse_target("cuda:sm_80")
# resnet50's weight gradients (C, K, spatial in, filter, stride) at batch 32
LAYERS = [(64, 64, 56, 1, 1), (64, 64, 56, 3, 1), (256, 64, 56, 1, 1), (128, 128, 28, 3, 1), (256, 256, 14, 3, 1),
          (1024, 256, 14, 1, 1), (256, 1024, 14, 1, 1), (512, 512, 7, 3, 1), (128, 128, 56, 3, 2)]
CONFIGS = {"f32_nchw": dict(dtype="float32", layout="NCHW", n=1), "bf16x3_nchw": dict(dtype="bfloat16", out_dtype="float32", layout="NCHW", n=3),
           "bf16x3_nhwc": dict(dtype="bfloat16", out_dtype="float32", layout="NHWC", n=3),
           "bf16_nhwc": dict(dtype="bfloat16", layout="NHWC", n=1)}

def problems():
    for c, k, s, f, st in LAYERS:
        for name, cfg in CONFIGS.items():
            cfg = dict(cfg); n = cfg.pop("n")
            yield (c, k, s, f, st), name, bw.problem_from_params(batch=32 * n, in_channels=c, out_channels=k, input_spatial=(s, s),
                filter_spatial=(f, f), stride=st, padding=f // 2, **cfg)

if sys.argv[1] == "prepare":
    for _, _, p in problems():
        for spec in policy.module_specs(p, CUDA):
            try: compiler.find_or_compile([spec])
            except compiler.CompileError: print("no compile", spec.name)
    sys.exit(0)

import torch
from ops.torch import calls
from build_tools.probe_timing import timed
dev = torch.device("cuda", 0)
for layer, name, p in problems():
    try:
        kernel = calls.kernel_for(p, dev)
    except Exception as e:
        print(layer, name, "ERROR", str(e)[:200]); continue
    rng = np.random.default_rng(0)
    inputs = [calls.to_torch(a, dev, p.channels_last) for a in bw.random_inputs(p, rng)]
    outputs = [calls.to_torch(a, dev, p.channels_last) for a in known_answer.poisoned(p)]
    ms = timed(lambda: kernel(inputs, outputs), 10); flops = p.flops / (3 if "x3" in name else 1)
    print(f"{str(layer):24s} {name:12s} {ms:8.3f} ms  {flops / ms / 1e9:7.2f} TFLOP/s (of the f32 problem)", flush=True)

def torch_time(layer, dtype, tf32, cl):
    c, k, s, f, st = layer
    torch.backends.cudnn.allow_tf32 = tf32
    x = torch.randn(32, c, s, s, device=dev, dtype=dtype); w = torch.randn(k, c, f, f, device=dev, dtype=dtype)
    o = (s + 2 * (f // 2) - f) // st + 1
    g = torch.randn(32, k, o, o, device=dev, dtype=dtype)
    if cl: x, w, g = (t.to(memory_format=torch.channels_last) for t in (x, w, g))
    return timed(lambda: torch.ops.aten.convolution_backward(g, x, w, None, [st, st], [f // 2] * 2, [1, 1], False,
                                                             [0, 0], 1, [False, True, False]), 10)

for layer in LAYERS:
    print(f"{str(layer):24s} cuDNN f32 {torch_time(layer, torch.float32, False, False):.3f} ms, tf32 {torch_time(layer, torch.float32, True, False):.3f} ms, bf16 cl {torch_time(layer, torch.bfloat16, False, True):.3f} ms", flush=True)
