#!/bin/sh
cd "$(dirname "$0")"
iree-compile maxpool2d_bwd_nhwc_float16_n32_c64_i112x112_o56x56_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64-8e2c52ffc570e00b.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o maxpool2d_bwd_nhwc_float16_n32_c64_i112x112_o56x56_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64-8e2c52ffc570e00b.vmfb
