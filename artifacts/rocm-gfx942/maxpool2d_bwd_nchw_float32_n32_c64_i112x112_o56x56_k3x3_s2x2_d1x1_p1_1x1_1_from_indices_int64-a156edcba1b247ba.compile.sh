#!/bin/sh
cd "$(dirname "$0")"
iree-compile maxpool2d_bwd_nchw_float32_n32_c64_i112x112_o56x56_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64-a156edcba1b247ba.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o maxpool2d_bwd_nchw_float32_n32_c64_i112x112_o56x56_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64-a156edcba1b247ba.vmfb
