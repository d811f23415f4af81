#!/bin/sh
cd "$(dirname "$0")"
iree-compile avgpool3d_bwd_ndhwc_float16_n8_c64_i16x56x56_o16x56x56_k3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_nopadcount-bd201c4634db0daa.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o avgpool3d_bwd_ndhwc_float16_n8_c64_i16x56x56_o16x56x56_k3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_nopadcount-bd201c4634db0daa.vmfb
