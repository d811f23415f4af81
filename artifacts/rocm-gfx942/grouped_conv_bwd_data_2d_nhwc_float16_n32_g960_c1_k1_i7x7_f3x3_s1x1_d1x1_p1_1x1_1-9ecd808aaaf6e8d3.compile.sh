#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g960_c1_k1_i7x7_f3x3_s1x1_d1x1_p1_1x1_1-9ecd808aaaf6e8d3.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g960_c1_k1_i7x7_f3x3_s1x1_d1x1_p1_1x1_1-9ecd808aaaf6e8d3.vmfb
