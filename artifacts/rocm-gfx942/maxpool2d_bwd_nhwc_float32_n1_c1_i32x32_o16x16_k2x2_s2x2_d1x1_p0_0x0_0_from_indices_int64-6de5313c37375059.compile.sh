#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile maxpool2d_bwd_nhwc_float32_n1_c1_i32x32_o16x16_k2x2_s2x2_d1x1_p0_0x0_0_from_indices_int64-6de5313c37375059.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o maxpool2d_bwd_nhwc_float32_n1_c1_i32x32_o16x16_k2x2_s2x2_d1x1_p0_0x0_0_from_indices_int64-6de5313c37375059.hal.mlir
iree-compile --compile-from=hal maxpool2d_bwd_nhwc_float32_n1_c1_i32x32_o16x16_k2x2_s2x2_d1x1_p0_0x0_0_from_indices_int64-6de5313c37375059.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o maxpool2d_bwd_nhwc_float32_n1_c1_i32x32_o16x16_k2x2_s2x2_d1x1_p0_0x0_0_from_indices_int64-6de5313c37375059.vmfb
