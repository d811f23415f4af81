#!/bin/sh
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float32_n32_g1_c256_k256_i28x28_f3x3_s2x2_d1x1_p1_1x1_1-51357d1e4fb12165.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o conv_bwd_data_2d_nhwc_float32_n32_g1_c256_k256_i28x28_f3x3_s2x2_d1x1_p1_1x1_1-51357d1e4fb12165.vmfb
