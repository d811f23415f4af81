#!/bin/sh
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k256_i56x56_f1x1_s1x1_d1x1_p0_0x0_0-2718cd6edce464c0.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k256_i56x56_f1x1_s1x1_d1x1_p0_0x0_0-2718cd6edce464c0.vmfb
