#!/bin/sh
cd "$(dirname "$0")"
iree-compile conv_bwd_data_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-bedfea3cef06fc82.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-bedfea3cef06fc82.vmfb
