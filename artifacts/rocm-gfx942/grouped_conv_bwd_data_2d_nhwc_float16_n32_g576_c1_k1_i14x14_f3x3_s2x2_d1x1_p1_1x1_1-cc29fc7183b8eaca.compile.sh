#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g576_c1_k1_i14x14_f3x3_s2x2_d1x1_p1_1x1_1-cc29fc7183b8eaca.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g576_c1_k1_i14x14_f3x3_s2x2_d1x1_p1_1x1_1-cc29fc7183b8eaca.vmfb
