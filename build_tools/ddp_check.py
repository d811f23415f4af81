"""Data-parallel training with converted models: ``DistributedDataParallel`` (or FSDP2's ``fully_shard``) over
``ops.torch.convert``'s model, beside PyTorch's over the same model unconverted, one process a device, the same
batches.

    python -m build_tools.ddp_check --device cpu --world 2 --steps 4 [--wrap fsdp2]     # gloo, CPU processes (CI)
    python -m build_tools.ddp_check --device cuda --world 2 --steps 20 [--wrap fsdp2]   # NCCL, one GPU a process
    python -m build_tools.ddp_check --device cuda --model resnet50 --config f32_nchw --batch 32 --steps 10
        # a torchvision model (build_tools/model_layers.py's, in one of its configurations): its modules compiled
        # first where a compiler is (python -m build_tools.model_bench --compile-only --models resnet50 ...)

Each rank trains both models on its own shard of the same synthetic batches; afterwards every rank writes its
parameters and losses, and rank 0 reports: whether the ranks' parameters are bitwise equal (DDP's all-reduce
must keep them so), the largest relative difference of our losses from PyTorch's DDP, and the median step time of
each (CUDA synchronized), and how far our trained parameters are from PyTorch's (not bitwise equal: our
kernels round differently). Nothing here changes how ``ops.torch`` runs: a converted layer's backward is an autograd
node like any other, and DDP's gradient hooks fire on the gradients our kernels return.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def model() -> nn.Module:
    """A small CNN of the layers converted models have: a strided, a grouped and a fused ReLU -> convolution,
    max pooling, batch norm."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=4), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
    )


SMALL = (3, 16, 16)  # the small CNN's input


def built(name: str | None, config: str, device: torch.device) -> tuple[nn.Module, torch.Tensor]:
    """(PyTorch's model on ``device``, an example input of one image): the small CNN in float32, or torchvision's
    ``name`` in ``config`` (``model_layers.build``: a fixed seed, the configuration's dtype and memory format)."""
    if name is None:
        torch.manual_seed(0)
        return model().to(device), torch.zeros(1, *SMALL, device=device)
    from build_tools import model_layers

    return model_layers.build(name, config, str(device), seed=0, batch=1)


def batches(steps: int, batch: int, rank: int, world: int, like: torch.Tensor, classes: int = 10) -> list:
    """The same synthetic batches on every rank, each rank taking its shard: inputs like ``like`` (its image shape,
    dtype, memory format), targets below ``classes``."""
    generator = torch.Generator().manual_seed(1234)
    data = [(torch.randn(batch * world, *like.shape[1:], generator=generator),
             torch.randint(0, classes, (batch * world,), generator=generator)) for _ in range(steps)]
    layout = torch.channels_last if like.dim() == 4 and not like.is_contiguous() else torch.contiguous_format
    return [(x[rank * batch:(rank + 1) * batch].to(like.dtype).contiguous(memory_format=layout),
             y[rank * batch:(rank + 1) * batch]) for x, y in data]


def _train(net: nn.Module, data: list, device: torch.device) -> tuple[list, list]:
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses, times = [], []
    for x, y in data:
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(net(x.to(device)).float(), y.to(device))
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    return losses, times


def wrapped(net: nn.Module, wrap: str, device: torch.device) -> nn.Module:
    """``net`` data-parallel: DDP, or FSDP2 (each child with parameters sharded, then the root)."""
    if wrap == "ddp":
        return nn.parallel.DistributedDataParallel(net, device_ids=[device.index] if device.type == "cuda" else None)
    from torch.distributed.fsdp import fully_shard

    for child in net.children():
        if next(child.parameters(), None) is not None:
            fully_shard(child)
    return fully_shard(net)


def _full(p: torch.Tensor) -> torch.Tensor:
    """A parameter's values on the CPU, gathered where FSDP2 shards it."""
    return (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().cpu()


def _digest(parameters: list) -> str:
    """One SHA-256 of every parameter's bytes: equal on two ranks only if their parameters are bitwise equal."""
    digest = hashlib.sha256()
    for p in parameters:
        digest.update(p.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _rank(rank: int, world: int, port: int, device_type: str, steps: int, batch: int, out: str, wrap: str,
          name: str | None, config: str, tf32: bool) -> None:
    import ops.torch as otorch

    torch.backends.cudnn.allow_tf32 = tf32
    backend = "nccl" if device_type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    device = torch.device("cuda", rank) if device_type == "cuda" else torch.device("cpu")
    if device_type == "cuda":
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(1)
    theirs, like = built(name, config, device)
    ours = otorch.convert(copy.deepcopy(theirs))
    data = batches(steps, batch, rank, world, like, 10 if name is None else 400)
    report, parameters = {}, {}
    for label, net in (("pytorch", theirs), ("ours", ours)):
        losses, times = _train(wrapped(net, wrap, device), data, device)
        parameters[label] = [_full(p) for p in net.parameters()]
        report[label] = {"losses": losses, "step_s": statistics.median(times[1:] or times),
                         "digest": _digest(parameters[label])}
    report["parameter_difference"] = max(float((a.double() - b.double()).abs().max())
                                         for a, b in zip(parameters["ours"], parameters["pytorch"]))
    Path(out, f"rank{rank}.json").write_text(json.dumps(report))
    dist.barrier()
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(device_type: str = "cpu", world: int = 2, steps: int = 4, batch: int = 8, wrap: str = "ddp",
        name: str | None = None, config: str = "f32_nchw", tf32: bool = True) -> dict:
    """Train on ``world`` processes and return the comparison (see the module docstring). The modules are compiled
    (or found) here first, so that the ranks load them rather than each compiling the same ones. ``tf32``: PyTorch's
    default for float32 convolutions (``torch.backends.cudnn.allow_tf32``; ours then split their weight gradients
    into bfloat16 x 3); off, both sides compute in full float32."""
    import ops.torch as otorch

    torch.backends.cudnn.allow_tf32 = tf32
    net, like = built(name, config, torch.device("cpu"))
    example = batches(1, batch, 0, world, like)[0][0]
    otorch.precompile(otorch.convert(net), example, device="cuda" if device_type == "cuda" else None, progress=False)
    with tempfile.TemporaryDirectory() as out:
        mp.spawn(_rank, args=(world, _free_port(), device_type, steps, batch, out, wrap, name, config, tf32), nprocs=world,
                 join=True)
        ranks = [json.loads(Path(out, f"rank{r}.json").read_text()) for r in range(world)]
    ours, theirs = ranks[0]["ours"], ranks[0]["pytorch"]
    return {
        "world": world, "device": device_type, "steps": steps, "wrap": wrap, "model": name or "small CNN",
        "config": config if name else "float32", "batch_per_rank": batch, "tf32": tf32,
        "ranks_equal": all(r[label]["digest"] == ranks[0][label]["digest"] for r in ranks for label in ("ours", "pytorch")),
        "loss_difference": max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(ours["losses"], theirs["losses"])),
        # ours against PyTorch's after training: small, and not zero where our kernels ran (other roundings)
        "parameter_difference": ranks[0]["parameter_difference"],
        "losses": {"ours": ours["losses"], "pytorch": theirs["losses"]},
        "step_ms": {"ours": 1e3 * ours["step_s"], "pytorch": 1e3 * theirs["step_s"]},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--wrap", default="ddp", choices=("ddp", "fsdp2"))
    parser.add_argument("--model", default=None, help="a torchvision model of build_tools/model_layers.py (default: "
                        "the small CNN)")
    parser.add_argument("--config", default="f32_nchw", help="the torchvision model's configuration: f32_nchw, "
                        "f32_cl or bf16_cl")
    parser.add_argument("--no-tf32", action="store_true", help="float32 convolutions in full float32 on both sides "
                        "(torch.backends.cudnn.allow_tf32 = False)")
    args = parser.parse_args(argv)
    result = run(args.device, args.world, args.steps, args.batch, args.wrap, args.model, args.config, not args.no_tf32)
    print(json.dumps(result, indent=1))
    return 0 if result["ranks_equal"] and result["loss_difference"] < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
