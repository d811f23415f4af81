#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_3d_ndhwc_float16_n4_g4_c128_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_e1_7f95c842db-477902ba297deb35.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_3d_ndhwc_float16_n4_g4_c128_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_e1_7f95c842db-477902ba297deb35.vmfb
