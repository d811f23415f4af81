#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_3d_ndhwc_float16_n8_g1_c64_k128_i16x56x56_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-f154f39b945fe578.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o conv_bwd_data_3d_ndhwc_float16_n8_g1_c64_k128_i16x56x56_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-f154f39b945fe578.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_3d_ndhwc_float16_n8_g1_c64_k128_i16x56x56_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-f154f39b945fe578.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_3d_ndhwc_float16_n8_g1_c64_k128_i16x56x56_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-f154f39b945fe578.vmfb
