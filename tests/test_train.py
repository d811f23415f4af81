"""build_tools/train.py: both models train the same whether their steps run in two blocks or take turns
(``--interleave``), and the converted model's losses follow PyTorch's."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from build_tools import train  # noqa: E402


def test_interleaved_steps_train_exactly_as_the_two_blocks_do():
    results = [train.train("cnn3d", torch.device("cpu"), 3, 2, torch.float32, False, 0, interleave=interleave)
               for interleave in (False, True)]
    assert [r["interleaved"] for r in results] == [False, True]
    blocks, turns = results
    assert blocks["losses_pytorch"] == turns["losses_pytorch"] and blocks["losses_ours"] == turns["losses_ours"]
    assert blocks["max_loss_difference"] < 1e-5 and all(t > 0 for t in (turns["median_step_ms_ours"],
                                                                         turns["median_step_ms_pytorch"]))
