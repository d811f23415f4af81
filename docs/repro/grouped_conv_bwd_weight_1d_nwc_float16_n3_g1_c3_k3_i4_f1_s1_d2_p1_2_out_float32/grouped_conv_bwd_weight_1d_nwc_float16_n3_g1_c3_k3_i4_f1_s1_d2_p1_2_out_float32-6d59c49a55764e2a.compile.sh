#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_1d_nwc_float16_n3_g1_c3_k3_i4_f1_s1_d2_p1_2_out_float32-6d59c49a55764e2a.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --compile-to=hal -o grouped_conv_bwd_weight_1d_nwc_float16_n3_g1_c3_k3_i4_f1_s1_d2_p1_2_out_float32-6d59c49a55764e2a.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_1d_nwc_float16_n3_g1_c3_k3_i4_f1_s1_d2_p1_2_out_float32-6d59c49a55764e2a.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 -o grouped_conv_bwd_weight_1d_nwc_float16_n3_g1_c3_k3_i4_f1_s1_d2_p1_2_out_float32-6d59c49a55764e2a.vmfb
