"""Per-parameter gradient differences of the bf16 resnext2d step: ours and PyTorch's bf16, each against float32 truth."""
import copy, json, os, sys, torch
from torch import nn
import ops.torch as otorch
from build_tools.train import BATCH, MODELS, model_memory_format

def grads(model, x, y):
    model.zero_grad(set_to_none=True)
    nn.CrossEntropyLoss()(model(x).float(), y).backward()
    return [p.grad.double().clone() for p in model.parameters()]

out = {}
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
for cl in (True, False):
    torch.manual_seed(0)
    build, shape = MODELS["resnext2d"]
    fmt = torch.channels_last if cl else torch.contiguous_format
    base = build().to(device="cuda", dtype=torch.bfloat16).to(memory_format=fmt)
    ours = otorch.convert(copy.deepcopy(base))
    truth = copy.deepcopy(base).float()
    batch = BATCH["cuda"]["resnext2d"]
    x = torch.randn(batch, *shape, device="cuda", dtype=torch.bfloat16).to(memory_format=fmt)
    y = torch.randint(0, 10, (batch,), device="cuda")
    g_ref, g_ours, g_true = grads(base, x, y), grads(ours, x, y), grads(truth, x.float(), y)
    rows = []
    for (name, p), a, b, t in zip(base.named_parameters(), g_ref, g_ours, g_true):
        n = t.norm().clamp_min(1e-30)
        rows.append((name, tuple(p.shape), float(t.norm()), float((a - t).norm() / n), float((b - t).norm() / n), float((b - a).norm() / a.norm().clamp_min(1e-30))))
    out["cl" if cl else "nchw"] = rows
    print("channels_last" if cl else "nchw")
    for r in sorted(rows, key=lambda r: -r[5])[:8]:
        print(f"  {r[0]:40s} {str(r[1]):20s} |g|={r[2]:.3g} torch_vs_f32={r[3]:.3g} ours_vs_f32={r[4]:.3g} ours_vs_torch={r[5]:.3g}")
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "bf16_diag.json"), "w"), indent=1)
