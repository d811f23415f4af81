"""A convolution layer's two gradients in one GPU module (ops/operators/conv_pair.py): f16x1's grad_out scaled once
for both, the policy that joins them (policy.joins), precompile's pairs, and ops.torch's Paired, which takes the
pair only where its first results are the two calls' own."""

from __future__ import annotations

import dataclasses
import re
import subprocess

import numpy as np
import pytest

from ops import compiler, policy, runtime, targets
from ops.operators import conv_bwd_data, conv_pair, grouped_conv_bwd_data, grouped_conv_bwd_weight

from lowering import without_gpu_configs

CUDA = targets.parse_target("cuda:sm_80")
LAYER = dict(batch=2, in_channels=16, out_channels=32, input_spatial=(8, 8), layout="NHWC", dtype="float32")
WIDER = dict(batch=8, in_channels=64, out_channels=128, input_spatial=(16, 16))  # the CUDA table's 3x3 rules apply


def _pair(precision="f16x1", filters=3, **changes) -> conv_pair.ConvBwdPair:
    params = dict(LAYER, padding=filters // 2, precision=precision, **changes)
    params["filter_spatial"] = (filters,) * len(params["input_spatial"])
    return conv_pair.ConvBwdPair(conv_bwd_data.problem_from_params(**params),
                                 grouped_conv_bwd_weight.problem_from_params(groups=1, **params))


def _spec(pair: conv_pair.ConvBwdPair, target=CUDA):
    return policy.pair_spec(pair, policy.module_spec(pair.data, target), policy.module_spec(pair.weight, target))


def _flow(spec: compiler.ModuleSpec, workdir) -> str:
    """``spec``'s module compiled to IREE's flow program (its dispatches formed)."""
    workdir.mkdir(parents=True, exist_ok=True)
    source, flow = workdir / f"{spec.name}.mlir", workdir / f"{spec.name}.flow.mlir"
    source.write_text(spec.mlir)
    subprocess.run([compiler.compiler_tool(), str(source), *spec.flags, "--compile-to=flow", "-o", str(flow)],
                   check=True, capture_output=True)
    return flow.read_text()


def _dispatches(spec: compiler.ModuleSpec, tmp_path) -> list[str]:
    return re.findall(r"flow\.dispatch @\w+::@(\w+)", _flow(spec, tmp_path))


@pytest.mark.parametrize("filters, stride, fewer", [(1, 1, 3), (3, 2, 2)])
def test_the_pair_scales_grad_out_once_for_both_gradients(tmp_path, filters, stride, fewer):
    """On CUDA, a 1x1 f16x1 layer's pair has three dispatches fewer than its two modules: grad_out's largest magnitude
    (two reductions) and its float16 copy, computed once; a strided 3x3 layer's, whose two copies are tiled apart,
    the largest magnitude's two."""
    pair = _pair(filters=filters, stride=stride, **WIDER)
    data, weight = (policy.module_spec(p, CUDA) for p in (pair.data, pair.weight))
    together = _dispatches(_spec(pair), tmp_path)
    apart = _dispatches(data, tmp_path) + _dispatches(weight, tmp_path)
    assert len(together) == len(apart) - fewer, (together, apart)
    reductions = [sum("_reduction_" in d for d in dispatches) for dispatches in (together, apart)]
    assert reductions[0] == reductions[1] - 2, (together, apart)


def test_the_pair_computes_both_gradients(tmp_path, rng):
    """The 1x1 layer's pair, its GPU configurations cut, run on the CPU: grad_in and grad_w each within f16x1's
    bound of the float64 references, from one call on grad_out, the weight and x."""
    pair = _pair(filters=1)
    spec = _spec(pair)
    cpu = compiler.ModuleSpec(pair.name, without_gpu_configs(spec.mlir), targets.parse_target("llvm-cpu"), (),
                              pair.summary)
    vmfb = compiler.compile_module(cpu, tmp_path / "pair.vmfb")
    function = runtime.loaded_function(cpu, vmfb.read_bytes(), "local-task", runtime.get_device("local-task"))
    grad_out, weight = conv_bwd_data.random_inputs(pair.data, rng)
    x, _ = grouped_conv_bwd_weight.random_inputs(pair.weight, rng)
    *_, grad_in, grad_w = function(grad_out, weight, x, np.zeros(pair.data.input_shape, np.float32),
                               np.zeros(pair.weight.weight_shape, np.float32))
    for got, want in ((grad_in, conv_bwd_data.reference(pair.data, [grad_out, weight])),
                      (grad_w, grouped_conv_bwd_weight.reference(pair.weight, [x, grad_out]))):
        error = np.abs(np.asarray(got.to_host(), np.float64) - want).max()
        assert error < 2.0 ** -9 * np.abs(want).max(), error


def test_the_policy_joins_scaled_gradients_of_one_convolution_on_gpus():
    """A pair where both gradients are f16x1 on a GPU, with the backward-data's flags: also where only it fuses its
    padding (a channels-last stride-1 3x3 layer); none where the weight gradient takes a flag the backward-data does
    not (r3d_18's 64-channel 3x3x3 layer: the split reduction), on the CPU, in float32 or bf16x3 (nothing to share);
    no ``pairs`` of two convolutions' problems, or of a backward-data with an epilogue."""
    assert _spec(_pair(stride=2, **WIDER)) is not None and _spec(_pair(filters=1)) is not None
    unfused = _pair(**WIDER)
    data, weight = (policy.module_spec(p, CUDA) for p in (unfused.data, unfused.weight))
    assert data.extra_flags == policy.PAIR_WEIGHT_FLAGS[:1] and weight.extra_flags == ()
    assert _spec(unfused).flags == data.flags
    video = _pair(batch=8, in_channels=64, out_channels=64, input_spatial=(16, 56, 56), filters=3, layout="NDHWC")
    assert "--iree-dispatch-creation-enable-split-reduction" in policy.module_spec(video.weight, CUDA).extra_flags
    assert _spec(video) is None
    assert _spec(_pair(precision="float32")) is None and _spec(_pair(precision="bf16x3")) is None
    assert not policy.joins(_pair(), targets.parse_target("llvm-cpu"))
    other = _pair(out_channels=48)
    assert conv_pair.pairs(_pair().data, _pair().weight) and not conv_pair.pairs(_pair().data, other.weight)
    relu = grouped_conv_bwd_data.problem_from_params(**LAYER, groups=1, filter_spatial=(3, 3), padding=1,
                                                     epilogue="where(d0 <= 0, 0, acc)", d_kinds=("full",))
    assert not conv_pair.pairs(relu, _pair(precision="float32").weight)


@pytest.mark.parametrize("layer", [dict(batch=32, in_channels=64, out_channels=64, input_spatial=(56, 56)),
                                   dict(batch=32, in_channels=128, out_channels=512, input_spatial=(28, 28),
                                        layout="NCHW", filters=1)])
def test_the_pairs_weight_flags_leave_its_weight_gradients_program_as_it_is(tmp_path, layer):
    """policy.PAIR_WEIGHT_FLAGS: ResNet-50's 64-channel 3x3 layer (channels-last, its backward-data fuses its
    padding) and 128 -> 512 1x1 layer (channels-first, its backward-data keeps its transposes): the weight
    gradient's flow program with the backward-data's flags is the one without, so its pair computes it alike."""
    pair = _pair(**{**LAYER, **layer})
    data, weight = (policy.module_spec(p, CUDA) for p in (pair.data, pair.weight))
    extra = tuple(f for f in data.extra_flags if f not in weight.extra_flags)
    assert extra and set(extra) <= set(policy.PAIR_WEIGHT_FLAGS)
    flows = [_flow(dataclasses.replace(weight, extra_flags=weight.extra_flags + more), tmp_path / str(i))
             for i, more in enumerate(((), extra))]
    assert flows[0] == flows[1]


def test_precompile_builds_each_layers_pair_on_cuda():
    """A converted model's step recorded for CUDA with TF32 allowed: a pair for the layer that needs both gradients
    (not the first, whose input needs none), named for it; none recorded for the CPU."""
    torch = pytest.importorskip("torch")
    from ops.torch import kernels
    import ops.torch as otorch

    model = otorch.convert(torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1),
                                               torch.nn.Conv2d(16, 32, 3, padding=1)))
    x = torch.randn(4, 3, 8, 8)
    with kernels.recording(None) as problems:
        model(x).sum().backward()
    assert policy.pair_specs(problems, targets.parse_target("llvm-cpu")) == []
    with kernels.recording("cuda") as problems:
        model(x).sum().backward()
    (spec,) = policy.pair_specs(problems, CUDA)
    assert spec.name.startswith("conv_bwd_pair_2d_nchw_float32_n4_g1_c16_k32_i8x8_f3x3") and spec.name.endswith("f16x1")
    assert policy.pair_specs(problems[::-1], CUDA) == []  # each weight gradient after its layer's backward-data


class _Call:
    """A ready call's stand-in (calls.Prepared's interface that Paired uses): writes ``value`` into fresh outputs."""

    def __init__(self, value: float, torch):
        self.value, self.torch, self.calls = value, torch, 0
        self.problem = type("Problem", (), {"name": f"call{value}"})()
        self.launched_on_cpu, self.device = False, torch.device("cpu")

    def tensors(self, args):
        return list(args), [self.torch.empty(2)]

    def result(self, outputs):
        return outputs[0]

    def __call__(self, args):
        self.calls += 1
        return self.torch.full((2,), self.value)


@pytest.mark.parametrize("same", [True, False])
def test_paired_keeps_the_joint_call_only_where_its_first_results_are_the_calls_own(monkeypatch, same):
    """The joint call serves after its first results match the two calls' own bit for bit; where they differ it is
    given up (said once) and the calls serve; while a CUDA graph is captured, an unchecked pair runs the calls."""
    torch = pytest.importorskip("torch")
    from ops import validation
    from ops.torch import calls

    said = []
    monkeypatch.setattr(validation, "say_once", said.append)
    first, second = _Call(1.0, torch), _Call(2.0, torch)
    launches = []

    def joint(inputs, outputs):
        launches.append(inputs)
        outputs[0].fill_(1.0)
        outputs[1].fill_(2.0 if same else 3.0)

    paired = calls.Paired(first, second, joint)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    assert [r.tolist() for r in paired(("g", "w"), ("x", "g"))] == [[1.0, 1.0], [2.0, 2.0]]
    assert launches == [] and (first.calls, second.calls) == (1, 1)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    results = paired(("g", "w"), ("x", "g"))
    assert launches == [["g", "w", "x"]] and [r.tolist() for r in results] == [[1.0, 1.0], [2.0, 2.0]]
    assert (first.calls, second.calls) == (2, 2) and bool(said) != same
    paired(("g", "w"), ("x", "g"))
    assert len(launches) == (2 if same else 1) and first.calls == (2 if same else 3)
