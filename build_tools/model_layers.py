"""The real-model yardstick's layers: every distinct backward convolution and pooling problem of one training step
of torchvision's models, recorded from the converted models (never copied by hand), as the suite ``models.json``.

    python -m build_tools.model_layers [--models resnet50,...] [--configs f32_nchw,...] [--out PATH]

Each model is built (torchvision, random initialization, fixed seed) in each configuration (``CONFIGS``: float32
channels-first, float32 channels-last, bfloat16 channels-last; for the 3D model channels-first is NCDHW and
channels-last NDHWC), converted with ``ops.torch.convert``, and one forward and backward of it run on the CPU under
``ops.torch.kernels.recording()``: PyTorch's layers compute, this library's kernels only note their problems. A
hook on each converted layer's output gradient says which layer's backward called each kernel. The manifest holds
each distinct backward problem once (forward ones, the pooling forwards, are not benchmark problems), named after
the first model, configuration and layer that has it, with every layer that has it in ``layers``; then

    python -m build_tools.bench --suite models --prepare [--gemm] --device cuda

compiles them all. torchvision is imported normally where it loads; where its compiled extension does not load
beside this PyTorch (torchvision's wheel is built for a CUDA PyTorch, this machine runs the CPU build) its model
modules, which are pure Python, are imported under a stand-in package (``torchvision_models``).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import importlib.metadata
import importlib.util
import json
import sys
import types
import warnings
from pathlib import Path

import torch
from torch import nn

import ops.torch as otorch
from ops import catalog
from ops.torch import kernels

MANIFEST = Path(__file__).resolve().parent / "manifests" / "models.json"
COMMAND = "python -m build_tools.model_layers"

# name: (batch, one sample's shape); the first four are the issue's, the last two are there because they convert
MODELS = {
    "resnet50": (32, (3, 224, 224)),
    "resnext50_32x4d": (32, (3, 224, 224)),
    "mobilenet_v2": (64, (3, 224, 224)),
    "r3d_18": (8, (3, 16, 112, 112)),
    "efficientnet_b0": (32, (3, 224, 224)),
    "regnet_y_400mf": (32, (3, 224, 224)),
}
# name: (dtype, channels-last memory format)
CONFIGS = {"f32_nchw": (torch.float32, False), "f32_cl": (torch.float32, True), "bf16_cl": (torch.bfloat16, True)}

# the layers ops.torch.convert takes, and its twins of them
_CONVERTIBLE = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.MaxPool2d, nn.AvgPool3d)
_TWINS = (otorch.Conv1d, otorch.Conv2d, otorch.Conv3d, otorch.MaxPool2d, otorch.AvgPool3d)
# the window parameters written as one number where every axis agrees (zoo.json's style)
_PER_AXIS = ("stride", "dilation", "kernel_size")


# --- torchvision ---------------------------------------------------------------------------------------------


def torchvision_models() -> types.ModuleType:
    """``torchvision.models`` (with ``.video`` imported): torchvision's own import where it loads (the GPU machine);
    else its model modules alone under a stand-in ``torchvision`` package whose ``__path__`` is the installed one,
    so torchvision's ``__init__`` (which loads the compiled extension: ``operator torchvision::nms does not exist``
    beside a PyTorch it was not built for) never runs. ``pip install --no-deps torchvision==0.28.0 pillow`` installs
    it beside a CPU PyTorch without pulling a CUDA one."""
    try:
        importlib.import_module("torchvision.models.video")
    except (ImportError, RuntimeError, OSError):
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        spec = importlib.util.find_spec("torchvision")
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError("model_layers needs torchvision: pip install --no-deps torchvision pillow "
                                      "(with --no-deps pip keeps this PyTorch)", name="torchvision") from None
        package = types.ModuleType("torchvision")
        package.__path__, package.__spec__ = list(spec.submodule_search_locations), spec
        sys.modules["torchvision"] = package
        importlib.import_module("torchvision.models.video")
    return sys.modules["torchvision.models"]


def plain_subclasses(model: nn.Module) -> list[str]:
    """Give each subclass of a layer ``convert`` takes that computes nothing of its own (no ``forward`` or
    ``_conv_forward`` of its own: r3d_18's ``Conv3DSimple`` adds a constructor and a static method) its base
    class back, in place, so that ``convert``, which takes exactly those classes, takes it. Returns their names."""
    changed = []
    for name, module in model.named_modules():
        base = next((b for b in _CONVERTIBLE if isinstance(module, b)), None)
        if base is None or type(module) is base:
            continue
        mro = type(module).__mro__
        own = {key for cls in mro[:mro.index(base)] for key in vars(cls)}
        if not own & {"forward", "_conv_forward"}:
            module.__class__ = base
            changed.append(name)
    return changed


def memory_format(sample_shape: tuple, channels_last: bool):
    """channels_last (2D) or channels_last_3d (3D) where asked, else contiguous."""
    if not channels_last:
        return torch.contiguous_format
    return torch.channels_last_3d if len(sample_shape) == 4 else torch.channels_last


def build(name: str, config: str, device: str = "cpu", seed: int = 0, batch: int | None = None):
    """(PyTorch's model, one batch of inputs) of torchvision's ``name`` in ``config``, on ``device``, from ``seed``:
    random weights, in training mode."""
    default_batch, sample_shape = MODELS[name]
    dtype, channels_last = CONFIGS[config]
    models = torchvision_models()
    builder = getattr(models, name, None) or getattr(models.video, name)
    torch.manual_seed(seed)
    fmt = memory_format(sample_shape, channels_last)
    model = builder().to(device=device, dtype=dtype).to(memory_format=fmt)
    generator = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(batch or default_batch, *sample_shape, generator=generator)
    return model.train(), x.to(device=device, dtype=dtype).contiguous(memory_format=fmt)


# --- Recording -----------------------------------------------------------------------------------------------


def converted(model: nn.Module) -> tuple[nn.Module, list[str], list[str]]:
    """``otorch.convert`` of a copy of ``model`` whose plain subclasses got their base class first
    (``plain_subclasses``): (the copy, what ``convert``'s warning says stayed PyTorch's, those subclasses)."""
    ours = copy.deepcopy(model)
    plain = plain_subclasses(ours)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        otorch.convert(ours)
    return ours, [str(w.message) for w in caught if "stay PyTorch's" in str(w.message)], plain


def record_layers(model: nn.Module, example: torch.Tensor) -> list[tuple[str, object]]:
    """(layer, problem) of each backward kernel call of one training step of the converted ``model`` on
    ``example`` (the forward, then a backward from the sum of its output), in the layers' order in the model.

    Nothing of this library runs (``kernels.recording``). Each converted layer's output gets a gradient hook as
    the forward makes it: it runs just before the layer's backward node, and autograd runs one node at a time on
    the CPU, so the problems recorded after it and before the next layer's hook are that layer's."""
    layers = {m: name for name, m in model.named_modules() if isinstance(m, _TWINS)}
    marks = []
    with kernels.recording() as problems:
        def note(module, inputs, output):
            first = output[0] if isinstance(output, tuple) else output
            if first.requires_grad:
                first.register_hook(lambda grad, name=layers[module]: marks.append((len(problems), name)))

        handles = [module.register_forward_hook(note) for module in layers]
        try:
            model(example).float().sum().backward()
        finally:
            for handle in handles:
                handle.remove()
    return _attributed(problems, marks, list(layers.values()))


def _attributed(problems: list, marks: list, order: list) -> list[tuple[str, object]]:
    """The backward problems (the manifests' operators) with the layer of the last mark at or before each."""
    records = []
    for index, problem in enumerate(problems):
        if problem.op not in catalog.OPERATORS:
            continue  # a forward (max pooling's, average pooling's): not a backward problem
        owners = [name for at, name in marks if at <= index]
        if not owners:
            raise RuntimeError(f"model_layers: {problem.name} was recorded before any layer's backward began")
        records.append((owners[-1], problem))
    ops_order = list(catalog.OPERATORS)
    return sorted(records, key=lambda r: (order.index(r[0]), ops_order.index(r[1].op)))


def record_model(name: str, config: str) -> dict:
    """One model in one configuration: its records and what ``convert`` left to PyTorch."""
    model, x = build(name, config)
    ours, left, plain = converted(model)
    del model
    return {"model": name, "config": config, "batch": x.shape[0], "input": list(x.shape[1:]),
            "records": record_layers(ours, x), "left_to_pytorch": left, "plain_subclasses": len(plain)}


# --- The manifest --------------------------------------------------------------------------------------------


def compact(params: dict) -> dict:
    """A problem's parameters as the manifests write them: tuples as lists, a window's per-axis values as one
    number where all axes agree, padding as one number (or one per axis) where its pairs are symmetric."""
    out = {}
    for key, value in params.items():
        if key in _PER_AXIS and len(set(value)) == 1:
            value = value[0]
        elif key == "padding" and all(lo == hi for lo, hi in value):
            sides = [lo for lo, _ in value]
            value = sides[0] if len(set(sides)) == 1 else sides
        out[key] = json.loads(json.dumps(value))
    return out


def entry_name(model: str, config: str, layer: str) -> str:
    return f"{model}_{config}_{layer.replace('.', '_')}"


def manifest(runs: list[dict]) -> dict:
    """The suite: one entry per distinct backward problem over every run, in the runs' and layers' order."""
    uses: dict = {}
    for run in runs:
        for layer, problem in run["records"]:
            uses.setdefault(problem, []).append((run["model"], run["config"], layer))
    problems = []
    for problem, where in uses.items():
        model, config, layer = where[0]
        problems.append({
            "op": problem.op, "name": entry_name(model, config, layer),
            "note": f"{model} {config} {layer}, N={problem.batch}; {len(where)} layer(s) of the recorded steps "
                    f"call it; {problem.name}",
            "params": compact(problem.params()),
            "layers": ["/".join(w) for w in where],
        })
    recorded = {f"{r['model']}/{r['config']}": {
        "batch": r["batch"], "input": r["input"], "kernel_calls": len(r["records"]),
        "distinct": len({p for _, p in r["records"]}), "left_to_pytorch": r["left_to_pytorch"],
        "plain_subclasses": r["plain_subclasses"]} for r in runs}
    return {"description": _description(runs), "recorded": recorded, "problems": problems}


def dumps(suite: dict) -> str:
    """The suite as JSON with one line per problem and per recorded run (hundreds of problems stay readable)."""
    def block(key: str, items: list[str], brackets: str) -> str:
        return f' "{key}": {brackets[0]}\n  ' + ",\n  ".join(items) + f"\n {brackets[1]}"

    recorded = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in suite["recorded"].items()]
    problems = [json.dumps(p) for p in suite["problems"]]
    return ("{\n" + f' "description": {json.dumps(suite["description"])},\n' + block("recorded", recorded, "{}")
            + ",\n" + block("problems", problems, "[]") + "\n}\n")


def _description(runs: list[dict]) -> str:
    models = ", ".join(dict.fromkeys(r["model"] for r in runs))
    configs = ", ".join(dict.fromkeys(r["config"] for r in runs))
    return (f"Backward convolution and pooling problems of one training step of torchvision's {models} in "
            f"{configs} (f32_nchw: float32 channels-first, NCDHW for 3D; f32_cl: float32 channels-last, NDHWC for "
            "3D; bf16_cl: bfloat16 channels-last), recorded by ops.torch.kernels.recording() from the models "
            "converted by ops.torch.convert (batch and input in 'recorded'; 'plain_subclasses' counts the layers of a "
            "subclass of nn.Conv3d computing nothing of its own, r3d_18's Conv3DSimple and Conv3DNoTemporal, given back their "
            "base class so that convert takes them). Each distinct problem once, named "
            "after the first model/config/layer that calls it; 'layers' lists every layer that does. Channels are "
            f"per group, as in CK. Generated, do not edit: {COMMAND} (torch {torch.__version__.split('+')[0]}, "
            f"torchvision {_torchvision_version()}).")


def _torchvision_version() -> str:
    """The installed torchvision's version, read from its metadata (importing it may not work: see above)."""
    try:
        return importlib.metadata.version("torchvision").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def names_of(model_config: str, suite: str = "models") -> list[str]:
    """The names of the suite's entries that ``model/config`` calls (an entry is named after its first caller,
    which may be another model), in the suite's order, each once."""
    prefix = model_config.rstrip("/") + "/"
    found = [e["name"] for e in catalog.entries(suite) if any(u.startswith(prefix) for u in e.get("layers", ()))]
    return list(dict.fromkeys(found))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--out", type=Path, default=MANIFEST)
    parser.add_argument("--threads", type=int, help="torch.set_num_threads")
    parser.add_argument("--names-of", metavar="MODEL/CONFIG",
                        help="only print the names of the suite's problems that MODEL/CONFIG calls, comma-separated "
                             "(for build_tools.bench --problems), from the committed suite (no torchvision needed)")
    args = parser.parse_args(argv)
    if args.names_of:
        print(",".join(names_of(args.names_of)))
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    runs = []
    for name in args.models.split(","):
        for config in args.configs.split(","):
            runs.append(record_model(name, config))
            r = runs[-1]
            print(f"{name} {config}: {len(r['records'])} backward kernel calls, "
                  f"{len({p for _, p in r['records']})} distinct problems"
                  + (f"; LEFT TO PYTORCH: {r['left_to_pytorch']}" if r["left_to_pytorch"] else ""), flush=True)
    suite = manifest(runs)
    args.out.write_text(dumps(suite))
    print(f"{len(suite['problems'])} distinct problems -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
