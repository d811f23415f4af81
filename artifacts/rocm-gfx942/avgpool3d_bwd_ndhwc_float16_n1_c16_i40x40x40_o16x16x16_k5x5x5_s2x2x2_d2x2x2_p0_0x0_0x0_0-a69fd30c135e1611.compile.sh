#!/bin/sh
cd "$(dirname "$0")"
iree-compile avgpool3d_bwd_ndhwc_float16_n1_c16_i40x40x40_o16x16x16_k5x5x5_s2x2x2_d2x2x2_p0_0x0_0x0_0-a69fd30c135e1611.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o avgpool3d_bwd_ndhwc_float16_n1_c16_i40x40x40_o16x16x16_k5x5x5_s2x2x2_d2x2x2_p0_0x0_0x0_0-a69fd30c135e1611.vmfb
