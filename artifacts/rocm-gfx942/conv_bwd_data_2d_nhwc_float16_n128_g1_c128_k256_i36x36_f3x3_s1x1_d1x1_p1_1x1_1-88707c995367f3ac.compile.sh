#!/bin/sh
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n128_g1_c128_k256_i36x36_f3x3_s1x1_d1x1_p1_1x1_1-88707c995367f3ac.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_2d_nhwc_float16_n128_g1_c128_k256_i36x36_f3x3_s1x1_d1x1_p1_1x1_1-88707c995367f3ac.vmfb
