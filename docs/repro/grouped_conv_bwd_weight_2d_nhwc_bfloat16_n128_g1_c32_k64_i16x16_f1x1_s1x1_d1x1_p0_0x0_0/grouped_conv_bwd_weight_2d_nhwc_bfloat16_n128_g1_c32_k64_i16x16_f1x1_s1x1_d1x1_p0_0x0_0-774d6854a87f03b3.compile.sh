#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c32_k64_i16x16_f1x1_s1x1_d1x1_p0_0x0_0-774d6854a87f03b3.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --compile-to=hal -o grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c32_k64_i16x16_f1x1_s1x1_d1x1_p0_0x0_0-774d6854a87f03b3.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c32_k64_i16x16_f1x1_s1x1_d1x1_p0_0x0_0-774d6854a87f03b3.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 -o grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c32_k64_i16x16_f1x1_s1x1_d1x1_p0_0x0_0-774d6854a87f03b3.vmfb
