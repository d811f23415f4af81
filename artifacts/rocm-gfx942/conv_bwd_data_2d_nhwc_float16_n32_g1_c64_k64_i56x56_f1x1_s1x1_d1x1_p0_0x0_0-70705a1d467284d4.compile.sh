#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k64_i56x56_f1x1_s1x1_d1x1_p0_0x0_0-70705a1d467284d4.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k64_i56x56_f1x1_s1x1_d1x1_p0_0x0_0-70705a1d467284d4.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k64_i56x56_f1x1_s1x1_d1x1_p0_0x0_0-70705a1d467284d4.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k64_i56x56_f1x1_s1x1_d1x1_p0_0x0_0-70705a1d467284d4.vmfb
