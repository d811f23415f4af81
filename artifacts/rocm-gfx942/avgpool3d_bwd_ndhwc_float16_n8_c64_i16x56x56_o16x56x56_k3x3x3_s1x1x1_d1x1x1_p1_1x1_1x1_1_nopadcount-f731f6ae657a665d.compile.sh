#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile avgpool3d_bwd_ndhwc_float16_n8_c64_i16x56x56_o16x56x56_k3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_nopadcount-f731f6ae657a665d.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o avgpool3d_bwd_ndhwc_float16_n8_c64_i16x56x56_o16x56x56_k3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_nopadcount-f731f6ae657a665d.hal.mlir
iree-compile --compile-from=hal avgpool3d_bwd_ndhwc_float16_n8_c64_i16x56x56_o16x56x56_k3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_nopadcount-f731f6ae657a665d.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o avgpool3d_bwd_ndhwc_float16_n8_c64_i16x56x56_o16x56x56_k3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_nopadcount-f731f6ae657a665d.vmfb
