"""Issue 45's check of the rules on layers no table names: random convolution layers drawn from the families of
the models (channels 16-1024, spatial 7-112, stride 1 or 2, one group to depthwise, batch 8-128), each as its
backward-data and backward-weight problem in bfloat16 channels-last, written as the suite ``random_layers``; or in
float32 NCHW (``CONFIGS``), drawn for ``build_tools.verify_run``'s set ``random:SEED:COUNT:f32_nchw``.

    python -m build_tools.random_layers --seed 45 --count 30     # writes build_tools/manifests/random_layers.json
    python -m build_tools.bench --suite random_layers --device cuda --gemm --prepare    # here: compile for the GPU
    python -m build_tools.bench --suite random_layers --device cuda --gemm              # on the GPU
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from ops import catalog

CHANNELS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
SPATIAL = (7, 14, 28, 56, 112)
BATCHES = (8, 16, 32, 64, 128)
MAX_ELEMENTS = 1 << 25  # x and grad_out of one layer at most this many elements each: the batch halves to fit
# name: (dtype, layout, channels a group of a grouped layer); float32 NCHW also draws the groups CUDA's float32
# grouped rule takes (16 or more channels a group: ResNeXt-50's last stages)
CONFIGS = {"bf16_cl": ("bfloat16", "NHWC", (4, 8)), "f32_nchw": ("float32", "NCHW", (4, 8, 16, 32))}


def layer(rng, config: str = "bf16_cl") -> dict:
    """One layer's parameters: its kind (dense, grouped as ResNeXt's, ``CONFIGS``' channels a group, or depthwise),
    filter (1x1 or 3x3), stride and sizes."""
    dtype, layout, group_channels = CONFIGS[config]
    kind = rng.choice(["dense", "dense", "grouped", "depthwise"])
    channels = int(rng.choice(CHANNELS))
    spatial = int(rng.choice(SPATIAL))
    filt = 3 if kind != "dense" else int(rng.choice([1, 3]))
    stride = int(rng.choice([1, 1, 2]))
    if kind == "depthwise":
        groups, c, k = channels, 1, 1
    elif kind == "grouped":
        c = int(rng.choice(group_channels))
        groups, k = max(channels // c, 2), c
    else:
        groups, c, k = 1, channels, int(min(1024, max(16, channels * rng.choice([0.5, 1, 2, 4]))))
    batch = int(rng.choice(BATCHES))
    while batch > 8 and batch * spatial * spatial * groups * max(c, k) > MAX_ELEMENTS:
        batch //= 2
    return dict(batch=batch, groups=groups, in_channels=c, out_channels=k, input_spatial=[spatial, spatial],
                filter_spatial=[filt, filt], stride=stride, padding=filt // 2, dilation=1, layout=layout,
                dtype=dtype)


def suite(seed: int, count: int, config: str = "bf16_cl") -> dict:
    """The suite: each layer's backward-data (conv_bwd_data for one group, else grouped_conv_bwd_data) and
    backward-weight problems, named by their draw."""
    rng = np.random.default_rng([seed, 45])
    problems = []
    for index in range(count):
        params = layer(rng, config)
        data_op = "conv_bwd_data" if params["groups"] == 1 else "grouped_conv_bwd_data"
        for op in (data_op, "grouped_conv_bwd_weight"):
            name = f"random{index:02d}"
            note = (f"random layer {index}: G={params['groups']} C={params['in_channels']} -> K={params['out_channels']}, "
                    f"{params['input_spatial'][0]}^2, {params['filter_spatial'][0]}x{params['filter_spatial'][0]}, "
                    f"stride {params['stride']}, N={params['batch']}")
            problems.append({"op": op, "name": name, "note": note, "params": dict(params)})
    dtype, layout, _ = CONFIGS[config]
    written = "channels-last" if layout == "NHWC" else layout
    return {"description": f"{count} random {dtype} {written} convolution layers of the models' families "
                           f"(build_tools/random_layers.py, seed {seed}), each as its backward-data and "
                           f"backward-weight problem.", "problems": problems}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=45)
    parser.add_argument("--count", type=int, default=30)
    args = parser.parse_args(argv)
    path = catalog.manifests_dir() / "random_layers.json"
    path.write_text(json.dumps(suite(args.seed, args.count), indent=1) + "\n")
    print(f"wrote {path}: {2 * args.count} problems")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
