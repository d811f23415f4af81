#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g32_c4_k4_i56x56_f3x3_s1x1_d1x1_p1_1x1_1_e1_1d850434a0-d9447a3650680df7.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g32_c4_k4_i56x56_f3x3_s1x1_d1x1_p1_1x1_1_e1_1d850434a0-d9447a3650680df7.vmfb
