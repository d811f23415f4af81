#!/bin/sh
cd "$(dirname "$0")"
iree-compile maxpool2d_bwd_nhwc_float16_n1_c1_i32x32_o30x30_k3x3_s1x1_d1x1_p0_0x0_0_from_indices_int64-2bf5224719b186ce.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o maxpool2d_bwd_nhwc_float16_n1_c1_i32x32_o30x30_k3x3_s1x1_d1x1_p0_0x0_0_from_indices_int64-2bf5224719b186ce.vmfb
