#!/bin/sh
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k512_i56x56_f1x1_s2x2_d1x1_p0_0x0_0-2f011d9631af5d40.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k512_i56x56_f1x1_s2x2_d1x1_p0_0x0_0-2f011d9631af5d40.vmfb
