#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nhwc_float16_n8_g144_c1_k1_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-f93b4410d8278a88.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o grouped_conv_bwd_weight_2d_nhwc_float16_n8_g144_c1_k1_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-f93b4410d8278a88.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nhwc_float16_n8_g144_c1_k1_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-f93b4410d8278a88.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o grouped_conv_bwd_weight_2d_nhwc_float16_n8_g144_c1_k1_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-f93b4410d8278a88.vmfb
