#!/bin/sh
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float32_n32_g1_c64_k64_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-00d453adaac0b3cb.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o conv_bwd_data_2d_nhwc_float32_n32_g1_c64_k64_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-00d453adaac0b3cb.vmfb
