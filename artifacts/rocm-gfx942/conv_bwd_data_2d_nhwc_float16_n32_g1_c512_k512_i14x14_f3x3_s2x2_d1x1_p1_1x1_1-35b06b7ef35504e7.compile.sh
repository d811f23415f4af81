#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n32_g1_c512_k512_i14x14_f3x3_s2x2_d1x1_p1_1x1_1-35b06b7ef35504e7.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o conv_bwd_data_2d_nhwc_float16_n32_g1_c512_k512_i14x14_f3x3_s2x2_d1x1_p1_1x1_1-35b06b7ef35504e7.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_2d_nhwc_float16_n32_g1_c512_k512_i14x14_f3x3_s2x2_d1x1_p1_1x1_1-35b06b7ef35504e7.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_2d_nhwc_float16_n32_g1_c512_k512_i14x14_f3x3_s2x2_d1x1_p1_1x1_1-35b06b7ef35504e7.vmfb
