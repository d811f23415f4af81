"""Issue 45's probe: ResNet-50's 1x1 and stride-1 3x3 backward-data at batch 32, float32 (the stride phases) against
bf16x3 (the gemm form, ``ops/operators/data_gemm.py``; the split_conv form, ``data_split_conv.py``), in both layouts,
each through the CUDA launcher as ops.torch runs it (checked on first use), beside cuDNN (FP32 and TF32).
docs/perf/h200-data-gemm, docs/perf/h100-split-conv.

    python -m build_tools.data_probe list
    OPS_CACHE_DIR=.gpu/cache python -m build_tools.data_probe prepare       # here: compile for sm_80
    OPS_CACHE_DIR=$PWD/.gpu/cache python -m build_tools.data_probe run      # on the GPU
"""
import sys
from ops import compiler, policy, targets
from ops.operators import conv_bwd_data as d

CUDA = targets.parse_target("cuda:sm_80")
# (C, K, spatial, stride, filter): the 1x1 layers, then the stride-1 3x3 ones (padding 1)
LAYERS = [(64, 64, 56, 1, 1), (64, 256, 56, 1, 1), (256, 64, 56, 1, 1), (256, 512, 56, 2, 1), (512, 128, 28, 1, 1),
          (1024, 256, 14, 1, 1), (1024, 2048, 14, 2, 1), (2048, 512, 7, 1, 1), (512, 2048, 7, 1, 1),
          (64, 64, 56, 1, 3), (128, 128, 28, 1, 3), (256, 256, 14, 1, 3), (512, 512, 7, 1, 3)]


def cases():
    for c, k, s, st, f in LAYERS:
        for layout in ("NCHW", "NHWC"):
            for precision in ("float32", "bf16x3"):
                yield (c, k, s, st, f), layout, precision, d.problem_from_params(
                    batch=32, in_channels=c, out_channels=k, input_spatial=(s, s), filter_spatial=(f, f), stride=st,
                    padding=f // 2, layout=layout, dtype="float32", precision=precision)


if sys.argv[1] == "list":
    for layer, layout, precision, p in cases():
        print(layer, layout, precision, p.name)
    sys.exit(0)

if sys.argv[1] == "prepare":
    for layer, layout, precision, p in cases():
        for spec in policy.module_specs(p, CUDA)[:1]:
            try:
                compiler.find_or_compile([spec])
            except compiler.CompileError:
                print("no compile", layer, layout, precision, flush=True)
    sys.exit(0)

import torch
from build_tools.probe_timing import kernel_line, timed
dev = torch.device("cuda", 0)
print(torch.cuda.get_device_name(), flush=True)


for layer, layout, precision, p in cases():
    print(kernel_line(f"{str(layer):22s} {layout} {precision:8s}", p, dev), flush=True)

for c, k, s, st, f in LAYERS:
    o = (s - 1) // st + 1
    line = f"{str((c, k, s, st, f)):22s} cuDNN"
    for tf32, cl in ((False, False), (True, False), (True, True)):
        torch.backends.cudnn.allow_tf32 = tf32
        w = torch.randn(k, c, f, f, device=dev); g = torch.randn(32, k, o, o, device=dev)
        if cl:
            w, g = (t.to(memory_format=torch.channels_last) for t in (w, g))
        ms = timed(lambda: torch.ops.aten.convolution_backward(g, torch.empty(32, c, s, s, device=dev), w, None,
                                                                [st, st], [f // 2] * 2, [1, 1], False, [0, 0], 1,
                                                                [True, False, False]))
        line += f" {'tf32' if tf32 else 'fp32'} {'nhwc' if cl else 'nchw'} {ms:.3f}"
    print(line + " ms", flush=True)
