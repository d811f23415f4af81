#!/bin/sh
cd "$(dirname "$0")"
iree-compile maxpool2d_bwd_nhwc_float32_n1_c1_i32x32_o16x16_k2x2_s2x2_d1x1_p0_0x0_0_from_indices_int64-41ebb3d64b7f34ee.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o maxpool2d_bwd_nhwc_float32_n1_c1_i32x32_o16x16_k2x2_s2x2_d1x1_p0_0x0_0_from_indices_int64-41ebb3d64b7f34ee.vmfb
