#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g32_c32_k32_i7x7_f3x3_s1x1_d1x1_p1_1x1_1_e1_9d524e7c4c-a0fd79972e726f0a.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g32_c32_k32_i7x7_f3x3_s1x1_d1x1_p1_1x1_1_e1_9d524e7c4c-a0fd79972e726f0a.vmfb
