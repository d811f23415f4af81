#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nhwc_float16_n8_g32_c4_k4_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-b72f379148580817.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-split-reduction --compile-to=hal -o grouped_conv_bwd_weight_2d_nhwc_float16_n8_g32_c4_k4_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-b72f379148580817.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nhwc_float16_n8_g32_c4_k4_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-b72f379148580817.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-split-reduction -o grouped_conv_bwd_weight_2d_nhwc_float16_n8_g32_c4_k4_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-b72f379148580817.vmfb
