"""Issue 45's probe: the backward-weight gemm form (``ops/operators/weight_gemm.py``) against the generic on ResNet-50's
1x1 weight gradients at batch 32, in bfloat16 and float32 channels-last, float32 channels-first, and float32 split
as bf16x3; each through the CUDA launcher as ops.torch runs it (checked on first use), beside cuDNN (FP32, TF32,
bfloat16). A form is forced for every case, whether or not the policy would take it (docs/perf/h200-gemm).

    python -m build_tools.gemm_probe list                                   # the cases
    OPS_CACHE_DIR=.gpu/cache python -m build_tools.gemm_probe prepare       # here: compile them for sm_80
    OPS_CACHE_DIR=$PWD/.gpu/cache python -m build_tools.gemm_probe run      # on the GPU
"""
import dataclasses
import sys
from ops import compiler, gemm_policy, policy, targets
from ops.operators import grouped_conv_bwd_weight as bw

CUDA = targets.parse_target("cuda:sm_80")
RULE = policy.FORM_RULES[bw.Form]  # the policy's own, put back after each forced form
LAYERS = [(64, 64, 56, 1), (64, 256, 56, 1), (256, 64, 56, 1), (256, 512, 56, 2), (1024, 256, 14, 1),
          (1024, 2048, 14, 2), (2048, 512, 7, 1)]
CONFIGS = {"bf16_nhwc": dict(dtype="bfloat16", layout="NHWC"), "f32_nchw": dict(dtype="float32", layout="NCHW"),
           "f32_nhwc": dict(dtype="float32", layout="NHWC"),
           "bf16x3_nchw": dict(dtype="float32", layout="NCHW", precision="bf16x3"),
           "bf16x3_nhwc": dict(dtype="float32", layout="NHWC", precision="bf16x3")}
FORMS = ("gemm", "generic")


def problem(layer, cfg):
    c, k, s, st = layer
    cfg = dict(cfg)
    precision = cfg.pop("precision", None)
    p = bw.problem_from_params(batch=32, in_channels=c, out_channels=k, input_spatial=(s, s), filter_spatial=(1, 1),
                               stride=st, padding=0, **cfg)
    return dataclasses.replace(p, precision=precision) if precision else p


def form_of(p, which):
    basis = p.computed_as
    if which == "gemm":
        return bw.Form(batch_split=gemm_policy.gemm_split(basis), contraction="gemm",
                       transpose=gemm_policy.gemm_transposes(basis))
    return bw.Form(batch_split=gemm_policy.default_batch_split(basis, CUDA))


def specs(p, which):
    policy.FORM_RULES[bw.Form] = lambda q, t: [form_of(q, which)]
    try:
        return policy.module_specs(p, CUDA)
    finally:
        policy.FORM_RULES[bw.Form] = RULE


def cases():
    for layer in LAYERS:
        for name, cfg in CONFIGS.items():
            for which in FORMS:
                if name.startswith("bf16x3") and which == "generic":
                    continue
                yield layer, name, which, problem(layer, cfg)


if sys.argv[1] == "list":
    for layer, name, which, p in cases():
        print(layer, name, which, form_of(p, which), p.name)
    sys.exit(0)

if sys.argv[1] == "prepare":
    for layer, name, which, p in cases():
        every = specs(p, which)
        for spec in every[:1] if which == "gemm" or name.startswith("f32") else every:
            try:
                compiler.find_or_compile([spec])
            except compiler.CompileError:
                print("no compile", layer, name, which, spec.flags, flush=True)
    sys.exit(0)

import torch
from build_tools.probe_timing import kernel_line, timed
dev = torch.device("cuda", 0)
print(torch.cuda.get_device_name(), flush=True)


for layer, name, which, p in cases():
    policy.FORM_RULES[bw.Form] = lambda q, t, which=which: [form_of(q, which)]
    try:
        print(kernel_line(f"{str(layer):22s} {name:12s} {which:8s}", p, dev), flush=True)
    finally:
        policy.FORM_RULES[bw.Form] = RULE


def torch_time(layer, dtype, tf32, cl):
    c, k, s, st = layer
    torch.backends.cudnn.allow_tf32 = tf32
    x = torch.randn(32, c, s, s, device=dev, dtype=dtype); w = torch.randn(k, c, 1, 1, device=dev, dtype=dtype)
    o = (s - 1) // st + 1
    g = torch.randn(32, k, o, o, device=dev, dtype=dtype)
    if cl:
        x, w, g = (t.to(memory_format=torch.channels_last) for t in (x, w, g))
    return timed(lambda: torch.ops.aten.convolution_backward(g, x, w, None, [st, st], [0, 0], [1, 1], False, [0, 0], 1,
                                                             [False, True, False]))


for layer in LAYERS:
    print(f"{str(layer):22s} cuDNN f32 nchw {torch_time(layer, torch.float32, False, False):.3f} ms, tf32 nchw "
          f"{torch_time(layer, torch.float32, True, False):.3f}, tf32 nhwc {torch_time(layer, torch.float32, True, True):.3f}"
          f", bf16 nhwc {torch_time(layer, torch.bfloat16, False, True):.3f} ms", flush=True)
