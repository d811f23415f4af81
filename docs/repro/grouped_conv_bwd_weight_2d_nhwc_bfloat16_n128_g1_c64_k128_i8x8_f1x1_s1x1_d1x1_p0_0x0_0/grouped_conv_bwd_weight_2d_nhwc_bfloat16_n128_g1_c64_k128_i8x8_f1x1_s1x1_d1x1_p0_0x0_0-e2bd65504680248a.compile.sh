#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c64_k128_i8x8_f1x1_s1x1_d1x1_p0_0x0_0-e2bd65504680248a.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --compile-to=hal -o grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c64_k128_i8x8_f1x1_s1x1_d1x1_p0_0x0_0-e2bd65504680248a.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c64_k128_i8x8_f1x1_s1x1_d1x1_p0_0x0_0-e2bd65504680248a.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 -o grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c64_k128_i8x8_f1x1_s1x1_d1x1_p0_0x0_0-e2bd65504680248a.vmfb
