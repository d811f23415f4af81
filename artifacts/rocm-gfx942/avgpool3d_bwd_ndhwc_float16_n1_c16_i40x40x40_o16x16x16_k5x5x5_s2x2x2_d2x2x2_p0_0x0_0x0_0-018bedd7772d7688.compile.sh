#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile avgpool3d_bwd_ndhwc_float16_n1_c16_i40x40x40_o16x16x16_k5x5x5_s2x2x2_d2x2x2_p0_0x0_0x0_0-018bedd7772d7688.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o avgpool3d_bwd_ndhwc_float16_n1_c16_i40x40x40_o16x16x16_k5x5x5_s2x2x2_d2x2x2_p0_0x0_0x0_0-018bedd7772d7688.hal.mlir
iree-compile --compile-from=hal avgpool3d_bwd_ndhwc_float16_n1_c16_i40x40x40_o16x16x16_k5x5x5_s2x2x2_d2x2x2_p0_0x0_0x0_0-018bedd7772d7688.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o avgpool3d_bwd_ndhwc_float16_n1_c16_i40x40x40_o16x16x16_k5x5x5_s2x2x2_d2x2x2_p0_0x0_0x0_0-018bedd7772d7688.vmfb
