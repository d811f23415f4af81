#!/bin/sh
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n128_g1_c256_k256_i71x71_f3x3_s2x2_d1x1_p1_1x1_1-8f6266d3e0786737.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_2d_nhwc_float16_n128_g1_c256_k256_i71x71_f3x3_s2x2_d1x1_p1_1x1_1-8f6266d3e0786737.vmfb
