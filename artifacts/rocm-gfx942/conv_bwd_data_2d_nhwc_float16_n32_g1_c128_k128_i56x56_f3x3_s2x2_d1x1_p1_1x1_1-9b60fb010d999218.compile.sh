#!/bin/sh
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n32_g1_c128_k128_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-9b60fb010d999218.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_2d_nhwc_float16_n32_g1_c128_k128_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-9b60fb010d999218.vmfb
