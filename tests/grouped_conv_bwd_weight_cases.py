"""Small grouped_conv_bwd_weight problems covering the parameter space; numerics and lowering tests share them.

``in_channels``/``out_channels`` are per group (CK's C and K): x holds groups*in_channels channels.
"""

from ops.operators.grouped_conv_bwd_weight import problem_from_params

CASES = {
    "1d_nwc_g1_s1": dict(batch=2, groups=1, in_channels=5, out_channels=3, input_spatial=(11,), filter_spatial=(3,), padding=1, layout="NWC", dtype="float32"),
    "1d_ncw_g2_s2_d2_asym_f16": dict(batch=2, groups=2, in_channels=8, out_channels=16, input_spatial=(13,), filter_spatial=(4,), stride=2, dilation=2, padding=((2, 1),), layout="NCW", dtype="float16"),
    "2d_nhwc_g4_s2_p1_f16": dict(batch=2, groups=4, in_channels=16, out_channels=16, input_spatial=(9, 9), filter_spatial=(3, 3), stride=2, padding=1, layout="NHWC", dtype="float16"),
    "2d_nchw_g2_d2_asym": dict(batch=2, groups=2, in_channels=3, out_channels=5, input_spatial=(10, 9), filter_spatial=(3, 2), dilation=2, padding=((2, 1), (0, 2)), layout="NCHW", dtype="float32"),
    "2d_nhwc_g4_s2x1_asym": dict(batch=3, groups=4, in_channels=2, out_channels=3, input_spatial=(9, 8), filter_spatial=(3, 3), stride=(2, 1), padding=((1, 0), (2, 1)), layout="NHWC", dtype="float32"),
    "2d_nhwc_depthwise_k1_s2": dict(batch=2, groups=6, in_channels=1, out_channels=1, input_spatial=(8, 7), filter_spatial=(3, 3), stride=2, padding=1, layout="NHWC", dtype="float32"),
    "2d_nchw_depthwise_k2_f16": dict(batch=2, groups=4, in_channels=1, out_channels=2, input_spatial=(9, 8), filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float16"),
    "2d_nhwc_g2_bf16_out_f32": dict(batch=2, groups=2, in_channels=16, out_channels=16, input_spatial=(8, 8), filter_spatial=(3, 3), padding=1, layout="NHWC", dtype="bfloat16", out_dtype="float32"),
    "2d_nchw_g1_s2_f16_out_f32": dict(batch=2, groups=1, in_channels=16, out_channels=32, input_spatial=(7, 7), filter_spatial=(3, 3), stride=2, layout="NCHW", dtype="float16", out_dtype="float32"),
    "3d_ndhwc_g2_s2_p1": dict(batch=1, groups=2, in_channels=3, out_channels=4, input_spatial=(5, 6, 7), filter_spatial=(3, 3, 3), stride=2, padding=1, layout="NDHWC", dtype="float32"),
    "3d_ncdhw_g1_mixed_f16": dict(batch=2, groups=1, in_channels=16, out_channels=16, input_spatial=(6, 5, 7), filter_spatial=(2, 3, 2), stride=(1, 2, 3), dilation=(2, 1, 1), padding=((1, 0), (0, 1), (1, 1)), layout="NCDHW", dtype="float16"),
    "3d_ndhwc_g4_d2_bf16": dict(batch=1, groups=4, in_channels=16, out_channels=16, input_spatial=(6, 6, 6), filter_spatial=(3, 3, 3), dilation=2, padding=2, layout="NDHWC", dtype="bfloat16"),
}

PROBLEMS = {name: problem_from_params(**params) for name, params in CASES.items()}

# layers the CPU tuning table names (an ``except``: measured slower with its rule's form, MobileNetV2's, batch 16;
# an entry: a tile measured on cnn3d's two 3-D layers and a ResNet-style layer; from build_tools/layer_bench.py): not run here, only known by name
# (tests/test_structure.py)
TABLE_NAMED = {
    name: problem_from_params(**params) for name, params in {
        "mobilenetv2_1x1_24_144": dict(batch=16, in_channels=24, out_channels=144, input_spatial=(16, 16),
                                       filter_spatial=(1, 1), layout="NCHW", dtype="float32"),
        "mobilenetv2_stem": dict(batch=16, in_channels=3, out_channels=16, input_spatial=(64, 64), filter_spatial=(3, 3),
                                 stride=2, padding=1, layout="NCHW", dtype="float32"),
        "cnn3d_stem": dict(batch=4, in_channels=3, out_channels=16, input_spatial=(8, 32, 32), filter_spatial=(3, 3, 3),
                           padding=1, layout="NCDHW", dtype="float32"),
        "cnn3d_g4": dict(batch=4, groups=4, in_channels=4, out_channels=8, input_spatial=(4, 16, 16),
                         filter_spatial=(3, 3, 3), padding=1, layout="NCDHW", dtype="float32"),
        "resnet_3x3_32": dict(batch=16, in_channels=32, out_channels=32, input_spatial=(16, 16), filter_spatial=(3, 3),
                              padding=1, layout="NCHW", dtype="float32"),
    }.items()}
