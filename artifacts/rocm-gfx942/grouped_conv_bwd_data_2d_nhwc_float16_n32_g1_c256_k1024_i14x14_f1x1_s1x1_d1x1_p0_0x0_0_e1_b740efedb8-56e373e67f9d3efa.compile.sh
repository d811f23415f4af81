#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k1024_i14x14_f1x1_s1x1_d1x1_p0_0x0_0_e1_b740efedb8-56e373e67f9d3efa.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k1024_i14x14_f1x1_s1x1_d1x1_p0_0x0_0_e1_b740efedb8-56e373e67f9d3efa.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k1024_i14x14_f1x1_s1x1_d1x1_p0_0x0_0_e1_b740efedb8-56e373e67f9d3efa.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g1_c256_k1024_i14x14_f1x1_s1x1_d1x1_p0_0x0_0_e1_b740efedb8-56e373e67f9d3efa.vmfb
