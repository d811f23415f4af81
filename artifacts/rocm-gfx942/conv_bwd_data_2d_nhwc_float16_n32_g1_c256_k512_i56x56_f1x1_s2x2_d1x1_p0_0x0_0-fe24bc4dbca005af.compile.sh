#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k512_i56x56_f1x1_s2x2_d1x1_p0_0x0_0-fe24bc4dbca005af.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k512_i56x56_f1x1_s2x2_d1x1_p0_0x0_0-fe24bc4dbca005af.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k512_i56x56_f1x1_s2x2_d1x1_p0_0x0_0-fe24bc4dbca005af.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k512_i56x56_f1x1_s2x2_d1x1_p0_0x0_0-fe24bc4dbca005af.vmfb
