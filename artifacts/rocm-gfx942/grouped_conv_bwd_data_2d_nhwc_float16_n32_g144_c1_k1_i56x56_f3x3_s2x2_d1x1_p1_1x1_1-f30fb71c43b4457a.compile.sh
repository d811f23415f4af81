#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g144_c1_k1_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-f30fb71c43b4457a.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g144_c1_k1_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-f30fb71c43b4457a.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_data_2d_nhwc_float16_n32_g144_c1_k1_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-f30fb71c43b4457a.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g144_c1_k1_i56x56_f3x3_s2x2_d1x1_p1_1x1_1-f30fb71c43b4457a.vmfb
