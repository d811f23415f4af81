"""Data-parallel training (build_tools/ddp_check.py): DistributedDataParallel and FSDP2's fully_shard over a
converted model, two CPU processes on the gloo backend, against PyTorch's over the same model on the same data."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from build_tools import ddp_check  # noqa: E402


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="PyTorch without gloo")
@pytest.mark.parametrize("wrap", ["ddp", "fsdp2"])
def test_data_parallel_over_a_converted_model_keeps_ranks_equal_and_tracks_pytorchs_losses(wrap):
    result = ddp_check.run("cpu", world=2, steps=4, batch=8, wrap=wrap)
    assert result["ranks_equal"]  # every rank's parameters bitwise equal, ours and PyTorch's DDP alike
    assert result["loss_difference"] < 1e-4
    assert 0 < result["parameter_difference"] < 1e-5  # our kernels ran (their own rounding), and agree
