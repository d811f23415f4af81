#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nchw_bfloat16_n2_g1_c2_k4_i10x7_f3x3_s2x3_d1x2_p2_2x2_1-b21888dc0c3c0486.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --compile-to=hal -o conv_bwd_data_2d_nchw_bfloat16_n2_g1_c2_k4_i10x7_f3x3_s2x3_d1x2_p2_2x2_1-b21888dc0c3c0486.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_2d_nchw_bfloat16_n2_g1_c2_k4_i10x7_f3x3_s2x3_d1x2_p2_2x2_1-b21888dc0c3c0486.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 -o conv_bwd_data_2d_nchw_bfloat16_n2_g1_c2_k4_i10x7_f3x3_s2x3_d1x2_p2_2x2_1-b21888dc0c3c0486.vmfb
