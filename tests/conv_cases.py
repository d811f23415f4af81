"""Small conv_bwd_data problems that cover the parameter space; numerics and lowering tests share them."""

from ops.operators.conv_bwd_data import problem_from_params

CASES = {
    "1d_nwc_s1": dict(batch=2, in_channels=5, out_channels=3, input_spatial=(11,), filter_spatial=(3,), stride=1, padding=1, layout="NWC", dtype="float32"),
    "1d_ncw_s3_d2_asym_f16": dict(batch=2, in_channels=6, out_channels=4, input_spatial=(13,), filter_spatial=(4,), stride=3, dilation=2, padding=((2, 1),), layout="NCW", dtype="float16"),
    "2d_nhwc_s2_p1": dict(batch=2, in_channels=5, out_channels=7, input_spatial=(9, 9), filter_spatial=(3, 3), stride=2, padding=1, layout="NHWC", dtype="float32"),
    "2d_nchw_s3x2_d1x2_asym": dict(batch=2, in_channels=3, out_channels=5, input_spatial=(10, 9), filter_spatial=(3, 2), stride=(3, 2), dilation=(1, 2), padding=((1, 0), (0, 2)), layout="NCHW", dtype="float32"),
    "2d_nhwc_s1_d2_f16": dict(batch=2, in_channels=12, out_channels=10, input_spatial=(8, 7), filter_spatial=(3, 3), stride=1, dilation=2, padding=2, layout="NHWC", dtype="float16"),
    "2d_nhwc_unreached_rows": dict(batch=1, in_channels=4, out_channels=3, input_spatial=(10, 11), filter_spatial=(1, 2), stride=3, padding=0, layout="NHWC", dtype="float32"),
    "2d_nhwc_d3_s2_even_filter": dict(batch=2, in_channels=3, out_channels=6, input_spatial=(11, 7), filter_spatial=(3, 4), stride=2, dilation=(3, 1), padding=((0, 3), (2, 1)), layout="NHWC", dtype="float32"),
    "2d_nchw_s2_bf16": dict(batch=2, in_channels=9, out_channels=11, input_spatial=(7, 8), filter_spatial=(3, 3), stride=2, padding=1, layout="NCHW", dtype="bfloat16"),
    "3d_ndhwc_s2_p1": dict(batch=1, in_channels=3, out_channels=4, input_spatial=(5, 6, 7), filter_spatial=(3, 3, 3), stride=2, padding=1, layout="NDHWC", dtype="float32"),
    "3d_ncdhw_mixed_f16": dict(batch=2, in_channels=5, out_channels=3, input_spatial=(6, 5, 7), filter_spatial=(2, 3, 2), stride=(1, 2, 3), dilation=(2, 1, 1), padding=((1, 0), (0, 1), (1, 1)), layout="NCDHW", dtype="float16"),
}

PROBLEMS = {name: problem_from_params(**params) for name, params in CASES.items()}
