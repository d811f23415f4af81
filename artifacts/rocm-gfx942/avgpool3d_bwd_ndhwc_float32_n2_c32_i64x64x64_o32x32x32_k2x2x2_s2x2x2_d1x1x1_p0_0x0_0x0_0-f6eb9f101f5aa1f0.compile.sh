#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile avgpool3d_bwd_ndhwc_float32_n2_c32_i64x64x64_o32x32x32_k2x2x2_s2x2x2_d1x1x1_p0_0x0_0x0_0-f6eb9f101f5aa1f0.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o avgpool3d_bwd_ndhwc_float32_n2_c32_i64x64x64_o32x32x32_k2x2x2_s2x2x2_d1x1x1_p0_0x0_0x0_0-f6eb9f101f5aa1f0.hal.mlir
iree-compile --compile-from=hal avgpool3d_bwd_ndhwc_float32_n2_c32_i64x64x64_o32x32x32_k2x2x2_s2x2x2_d1x1x1_p0_0x0_0x0_0-f6eb9f101f5aa1f0.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o avgpool3d_bwd_ndhwc_float32_n2_c32_i64x64x64_o32x32x32_k2x2x2_s2x2x2_d1x1x1_p0_0x0_0x0_0-f6eb9f101f5aa1f0.vmfb
