#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile maxpool2d_bwd_nchw_float32_n32_c64_i112x112_o56x56_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64-6018dfef5ede0a42.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o maxpool2d_bwd_nchw_float32_n32_c64_i112x112_o56x56_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64-6018dfef5ede0a42.hal.mlir
iree-compile --compile-from=hal maxpool2d_bwd_nchw_float32_n32_c64_i112x112_o56x56_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64-6018dfef5ede0a42.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o maxpool2d_bwd_nchw_float32_n32_c64_i112x112_o56x56_k3x3_s2x2_d1x1_p1_1x1_1_from_indices_int64-6018dfef5ede0a42.vmfb
