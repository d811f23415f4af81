#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile avgpool3d_bwd_ndhwc_float16_n8_c128_i16x56x56_o8x28x28_k2x2x2_s2x2x2_d1x1x1_p0_0x0_0x0_0-3ad9d9771c20b445.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o avgpool3d_bwd_ndhwc_float16_n8_c128_i16x56x56_o8x28x28_k2x2x2_s2x2x2_d1x1x1_p0_0x0_0x0_0-3ad9d9771c20b445.hal.mlir
iree-compile --compile-from=hal avgpool3d_bwd_ndhwc_float16_n8_c128_i16x56x56_o8x28x28_k2x2x2_s2x2x2_d1x1x1_p0_0x0_0x0_0-3ad9d9771c20b445.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o avgpool3d_bwd_ndhwc_float16_n8_c128_i16x56x56_o8x28x28_k2x2x2_s2x2x2_d1x1x1_p0_0x0_0x0_0-3ad9d9771c20b445.vmfb
