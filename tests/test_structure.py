"""The package's shape: importing it loads no IREE module, and every operator declares the protocol."""

from __future__ import annotations

import subprocess
import sys

from ops import operator as protocol
from ops.registry import OPERATORS


def test_importing_ops_and_rendering_loads_no_iree_module():
    code = (
        "import sys, ops\n"
        "from ops import catalog, policy, targets\n"
        "for op, name, problem in catalog.problems('ck_examples'):\n"
        "    policy.module_specs(problem, targets.parse_target('llvm-cpu'))\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('iree'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_every_operator_module_declares_the_protocol():
    declared = [name for name in protocol.Operator.__annotations__]
    assert {"OP", "Problem", "Form", "normalize", "render", "reference", "results", "random_params"} <= set(declared)
    for op, entry in OPERATORS.items():
        module = entry.module
        missing = [name for name in declared if not hasattr(module, name)]
        assert not missing, f"{op}: {missing}"
        assert module.OP == op
        assert callable(module.render) and isinstance(module.Problem, type)


def test_no_spec_list_repeats_a_module():
    """A problem's alternatives (forms x fallback flag sets) name each distinct module once, on every target, for
    every catalog problem (forms that render the same MLIR once were listed again and again: issue 23)."""
    from ops import catalog, targets, policy

    for target in ("rocm:gfx942", "cuda:sm_80", "llvm-cpu"):
        for suite in catalog.suites():
            for op, name, problem in catalog.problems(suite):
                keys = [spec.key(None) for spec in policy.module_specs(problem, targets.parse_target(target))]
                assert len(keys) == len(set(keys)) >= 1, f"{op}/{name} on {target}"
