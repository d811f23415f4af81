#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g32_c32_k32_i7x7_f3x3_s1x1_d1x1_p1_1x1_1_e1_9d524e7c4c-b21c2bad303bb015.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g32_c32_k32_i7x7_f3x3_s1x1_d1x1_p1_1x1_1_e1_9d524e7c4c-b21c2bad303bb015.vmfb
