#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_1d_nwc_float16_n3_g1_c3_k3_i4_f1_s1_d2_p1_2_out_float32-fcdddca701be00f5.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false --compile-to=hal -o grouped_conv_bwd_weight_1d_nwc_float16_n3_g1_c3_k3_i4_f1_s1_d2_p1_2_out_float32-fcdddca701be00f5.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_1d_nwc_float16_n3_g1_c3_k3_i4_f1_s1_d2_p1_2_out_float32-fcdddca701be00f5.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false -o grouped_conv_bwd_weight_1d_nwc_float16_n3_g1_c3_k3_i4_f1_s1_d2_p1_2_out_float32-fcdddca701be00f5.vmfb
