#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile maxpool2d_bwd_nhwc_float16_n1_c1_i32x32_o30x30_k3x3_s1x1_d1x1_p0_0x0_0_from_indices_int64-e3763716a769c2f5.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o maxpool2d_bwd_nhwc_float16_n1_c1_i32x32_o30x30_k3x3_s1x1_d1x1_p0_0x0_0_from_indices_int64-e3763716a769c2f5.hal.mlir
iree-compile --compile-from=hal maxpool2d_bwd_nhwc_float16_n1_c1_i32x32_o30x30_k3x3_s1x1_d1x1_p0_0x0_0_from_indices_int64-e3763716a769c2f5.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o maxpool2d_bwd_nhwc_float16_n1_c1_i32x32_o30x30_k3x3_s1x1_d1x1_p0_0x0_0_from_indices_int64-e3763716a769c2f5.vmfb
