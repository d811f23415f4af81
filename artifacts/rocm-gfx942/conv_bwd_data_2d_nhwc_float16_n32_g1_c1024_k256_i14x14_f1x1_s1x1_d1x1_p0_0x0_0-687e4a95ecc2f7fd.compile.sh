#!/bin/sh
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n32_g1_c1024_k256_i14x14_f1x1_s1x1_d1x1_p0_0x0_0-687e4a95ecc2f7fd.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o conv_bwd_data_2d_nhwc_float16_n32_g1_c1024_k256_i14x14_f1x1_s1x1_d1x1_p0_0x0_0-687e4a95ecc2f7fd.vmfb
