#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nhwc_float16_n32_g96_c1_k1_i112x112_f3x3_s2x2_d1x1_p1_1x1_1-24050bab14ffceaa.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o grouped_conv_bwd_weight_2d_nhwc_float16_n32_g96_c1_k1_i112x112_f3x3_s2x2_d1x1_p1_1x1_1-24050bab14ffceaa.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nhwc_float16_n32_g96_c1_k1_i112x112_f3x3_s2x2_d1x1_p1_1x1_1-24050bab14ffceaa.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o grouped_conv_bwd_weight_2d_nhwc_float16_n32_g96_c1_k1_i112x112_f3x3_s2x2_d1x1_p1_1x1_1-24050bab14ffceaa.vmfb
