#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k1024_i14x14_f1x1_s1x1_d1x1_p0_0x0_0_e1_b740efedb8-5e0483b260494b39.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k1024_i14x14_f1x1_s1x1_d1x1_p0_0x0_0_e1_b740efedb8-5e0483b260494b39.vmfb
