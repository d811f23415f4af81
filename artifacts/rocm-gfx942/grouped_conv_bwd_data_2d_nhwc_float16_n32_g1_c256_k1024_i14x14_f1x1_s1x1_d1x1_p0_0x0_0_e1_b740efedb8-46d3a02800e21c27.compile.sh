#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k1024_i14x14_f1x1_s1x1_d1x1_p0_0x0_0_e1_b740efedb8-46d3a02800e21c27.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k1024_i14x14_f1x1_s1x1_d1x1_p0_0x0_0_e1_b740efedb8-46d3a02800e21c27.vmfb
