#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_3d_ndhwc_float16_n4_g4_c128_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_e1_7f95c842db-43caf42a83195473.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o grouped_conv_bwd_data_3d_ndhwc_float16_n4_g4_c128_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_e1_7f95c842db-43caf42a83195473.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_data_3d_ndhwc_float16_n4_g4_c128_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_e1_7f95c842db-43caf42a83195473.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_3d_ndhwc_float16_n4_g4_c128_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_e1_7f95c842db-43caf42a83195473.vmfb
