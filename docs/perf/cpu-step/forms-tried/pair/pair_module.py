"""One module computing a convolution layer's two gradients (one call instead of two): the backward-data and
weight-gradient modules of ``pair_problems.py`` (``pair_data.mlir``, ``pair_weight.mlir``), their type aliases
prefixed, their functions made private and stripped of the ABI attributes, and a public ``@pair`` calling both
(one transient workspace). Writes ``pair.mlir``.

    python docs/perf/cpu-step/forms-tried/pair/pair_module.py
"""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def private(path: str, prefix: str, name: str) -> str:
    """The module at ``path`` with its aliases prefixed and its function private, named ``name``."""
    with open(path) as f:
        text = f.read()
    text = re.sub(r"//[^\n]*\n(//[^\n]*\n)*, %transients: !hal\.buffer \{iree\.abi\.transients\}", "", text)
    text = re.sub(r"^//.*\n", "", text, flags=re.M)
    for alias in sorted(re.findall(r"^!(\w+) = ", text, flags=re.M), key=len, reverse=True):
        text = re.sub(r"!" + alias + r"\b", f"!{prefix}{alias}", text)
    text = re.sub(r"func\.func @\w+\(", f"func.func private @{name}(", text)
    return re.sub(r" \{iree\.abi\.output = 0 : index\}", "", text)


WRAPPER = """
func.func @pair(%go: !d_grad_out, %w: !d_weight, %d0: !d_d0, %x: !w_x, %dst_in: !d_grad_in {iree.abi.output = 0 : index}, %dst_w: !w_grad_w {iree.abi.output = 1 : index}, %transients: !hal.buffer {iree.abi.transients}) -> (!d_grad_in, !w_grad_w) {
  %a = func.call @data(%go, %w, %d0, %dst_in) : (!d_grad_out, !d_weight, !d_d0, !d_grad_in) -> !d_grad_in
  %b = func.call @weight(%x, %go, %dst_w) : (!w_x, !d_grad_out, !w_grad_w) -> !w_grad_w
  return %a, %b : !d_grad_in, !w_grad_w
}
"""

if __name__ == "__main__":
    with open(os.path.join(HERE, "pair.mlir"), "w") as f:
        f.write(private(os.path.join(HERE, "pair_data.mlir"), "d_", "data") + "\n"
                + private(os.path.join(HERE, "pair_weight.mlir"), "w_", "weight") + "\n" + WRAPPER)
