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


# --- Issue 23's objective figures: each one a check that fails when the house drifts ---------------------------

import ast  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import tokenize  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MAX_FUNCTION_LINES = 60


def _sources(*folders):
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def test_no_function_in_ops_is_longer_than_60_lines():
    long = [f"{p.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for p in _sources("ops") for node in ast.walk(ast.parse(p.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, long


def test_no_code_in_the_operators_reads_a_target():
    """Operators render the form they are given: only ops/policy.py asks which target a module is for."""
    names = {"target", "targets", "Target", "backend", "gpu", "cpu"}
    found = [f"{p.relative_to(ROOT)}:{token.start[0]}: {token.line.strip()}"
             for p in _sources("ops/operators")
             for token in tokenize.generate_tokens(io.StringIO(p.read_text()).readline)
             if token.type == tokenize.NAME and token.string in names]
    assert not found, found


def _operator_literals(tree) -> list[tuple[int, list[str]]]:
    """(line, names) of each list, tuple, set or dict literal naming two or more operators."""
    found = []
    for node in ast.walk(tree):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)) and items:
            named = [i.value for i in items if isinstance(i, ast.Constant) and i.value in OPERATORS]
            if len(named) >= 2:
                found.append((node.lineno, named))
    return found


def test_the_operators_are_listed_only_by_the_registry_and_all():
    """A new operator is one registry entry (and its public function in ``ops.__all__``): no other list of
    operators exists to be missed."""
    listed = {}
    for p in _sources("ops", "build_tools"):
        for line, named in _operator_literals(ast.parse(p.read_text())):
            listed[f"{p.relative_to(ROOT)}:{line}"] = named
    exported = [name for name in listed if name.startswith("ops/__init__.py")]
    assert len(exported) == 1, listed  # __all__
    assert set(listed) == set(exported), listed


def test_the_registry_knows_nothing_of_the_benchmarks_or_the_framework_bridge():
    """The registry lists operators; build_tools' PyTorch references and ops.torch's kernel ops keep their own maps
    to them (issue 47)."""
    text = (ROOT / "ops" / "registry.py").read_text()
    assert "build_tools" not in text and "torch" not in text and "bench" not in text


def _own_modules(tree) -> set[str]:
    """Names bound by imports of this project's modules (ops, build_tools)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in ("ops", "build_tools")):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in ("ops", "build_tools"))
    return names


def test_no_private_name_crosses_a_module_boundary():
    crossing = []
    for p in _sources("ops", "build_tools"):
        tree = ast.parse(p.read_text())
        own = _own_modules(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(("ops", "build_tools"))):
                crossing += [f"{p.relative_to(ROOT)}:{node.lineno} imports {a.name}" for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__")]
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in own):
                crossing.append(f"{p.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert not crossing, crossing


def _imports_of(path: Path, name: str, modules: dict) -> set[str]:
    """The modules of ``ops`` that module ``name`` (at ``path``) imports, anywhere in it."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module
            subs = [f"{base}.{a.name}" for a in node.names]
            found.update(s for s in subs if s in modules)
            if not all(s in modules for s in subs) and base in modules:
                found.add(base)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
    return found - {name}


def _import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Each module of ``package`` (under ``root``) and the modules of it that importing it runs: those it imports
    (at the top or inside a function), each with its parent packages (importing ``a.b.c`` runs ``a`` and ``a.b``
    first), and its own parent packages. A package's edges to its own submodules are left out: Python runs the
    package first, so a package that imports its submodules is no cycle."""
    modules = {}
    for p in sorted((root / package).rglob("*.py")):
        parts = p.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p

    def with_parents(name: str) -> set[str]:
        parts = name.split(".")
        return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & modules.keys()

    graph = {}
    for name, path in modules.items():
        imported = _imports_of(path, name, modules)
        edges = set().union(*(with_parents(n) for n in imported | {name}))
        graph[name] = {n for n in edges - {name} if not (path.name == "__init__.py" and n.startswith(name + "."))}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    def reaches(start, goal, seen):
        return any(n == goal or (n not in seen and not seen.add(n) and reaches(n, goal, seen)) for n in graph[start])

    return sorted(name for name in graph if reaches(name, name, set()))


def test_ops_has_no_import_cycle():
    """No module of ops imports (at the top or inside a function, or through a parent package that importing it
    runs) one that imports it back, however far."""
    cycles = _cycles(_import_graph(ROOT, "ops"))
    assert not cycles, cycles


def test_the_cycle_check_counts_the_edge_to_a_parent_package(tmp_path):
    """The shape the compiler and the launchers once had: ``compiler`` imports ``launch.plan``, which runs
    ``launch/__init__``, which imports ``compiler``. No module imports another that imports it back directly;
    the cycle runs through the parent package, and the check finds it."""
    (tmp_path / "pkg" / "launch").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "compiler.py").write_text("from .launch import plan\n")
    (tmp_path / "pkg" / "launch" / "__init__.py").write_text("def plan_of():\n    from .. import compiler\n")
    (tmp_path / "pkg" / "launch" / "plan.py").write_text("import json\n")
    assert _cycles(_import_graph(tmp_path, "pkg")) == ["pkg.compiler", "pkg.launch", "pkg.launch.plan"]
    (tmp_path / "pkg" / "launch" / "__init__.py").write_text("")
    assert _cycles(_import_graph(tmp_path, "pkg")) == []


def _called(path: Path) -> set[str]:
    """The dotted names ``path`` calls (``executor.ready``, ``known_answer.Gate``, ``loaded_function``...)."""
    return {ast.unparse(node.func) for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)}


def test_one_executor_entry_point_serves_both_apis():
    """The NumPy API (``ops/arrays.py``) and ops.torch (``ops/torch/calls.py``) get their calls from one entry
    point, ``executor.ready``; nothing else in ops loads a module to serve a problem or checks one on first use
    (a known-answer Gate, IREE's runtime's loader, a launcher's load)."""
    assert "executor.ready" in _called(ROOT / "ops" / "arrays.py")
    assert "executor.ready" in _called(ROOT / "ops" / "torch" / "calls.py")
    serving = {"known_answer.Gate", "runtime.loaded_function", "launcher.load"}
    elsewhere = [f"{p.relative_to(ROOT)}: {sorted(_called(p) & serving)}" for p in _sources("ops")
                 if p.name != "executor.py" and _called(p) & serving]
    assert not elsewhere, elsewhere


def _known_problem_names() -> set[str]:
    """Function names of every named problem: the manifests', the tests' own cases and the layers the tuning table
    names."""
    from ops import catalog
    from grouped_bwd_data_cases import CASES as grouped_cases, grouped_problem
    from conv_cases import PROBLEMS as conv_problems
    from grouped_conv_bwd_weight_cases import PROBLEMS as weight_problems, TABLE_NAMED

    names = {problem.name for suite in catalog.suites() for _, _, problem in catalog.problems(suite)}
    names |= {p.name for p in (*conv_problems.values(), *weight_problems.values(), *TABLE_NAMED.values())}
    return names | {grouped_problem(name).name for name in grouped_cases}


def test_every_tuning_table_key_names_an_operator_a_problem_and_a_form():
    """Each rule names a registered operator, kinds and a form its Form has; each exception and entry names an
    existing problem (the manifests' or the tests' cases); each entry's form is a valid form of its problem."""
    import dataclasses

    from ops import catalog, policy, registry, render, targets

    from grouped_conv_bwd_weight_cases import TABLE_NAMED

    names = _known_problem_names()
    problems = {p.name: p for suite in catalog.suites() for _, _, p in catalog.problems(suite)}
    problems |= {p.name: p for p in TABLE_NAMED.values()}
    for table in sorted((render.templates_dir() / "tuning").glob("*.json")):
        data = json.loads(table.read_text())
        for rule in data.get("rules", ()):
            Form = registry.module(rule["operator"]).Form
            assert set(rule.get("kinds", ())) <= {"dense", "grouped", "depthwise"}, (table.name, rule)
            dataclasses.replace(Form(), **rule.get("form", {}))  # a ValueError or TypeError names a bad key/value
            missing = set(rule.get("except", ())) - names
            assert not missing, (table.name, missing)
        for entry in data.get("entries", ()):
            assert entry["function"] in problems, (table.name, entry["function"])
            problem = problems[entry["function"]]
            dataclasses.replace(registry.module(problem).Form(), **entry.get("render", {}))
            assert policy.module_specs(problem, targets.parse_target(data["target"]))


def test_each_workaround_says_why_and_points_at_its_evidence():
    from ops import policy

    names = [w.name for w in policy.WORKAROUNDS]
    assert len(names) == len(set(names))
    for workaround in policy.WORKAROUNDS:
        assert workaround.reason and workaround.where, workaround.name
        assert (ROOT / workaround.evidence).exists(), (workaround.name, workaround.evidence)


def test_a_bad_form_key_or_value_names_the_operator_and_the_key():
    import pytest

    from ops import catalog, policy, targets
    from ops.operators import grouped_conv_bwd_weight, stride_phases

    with pytest.raises(ValueError, match=r"conv_bwd_data: form key store must be one of 'interleave', 'strided', "
                                         r"'transpose', but got 'scattered'"):
        stride_phases.Form(store="scattered")
    with pytest.raises(ValueError, match=r"grouped_conv_bwd_weight: form key contraction must be one of"):
        grouped_conv_bwd_weight.Form(contraction="winograd")
    problem = catalog.problem("grouped_conv_bwd_weight", "ck_default")
    with pytest.raises(ValueError, match=r"grouped_conv_bwd_weight: unknown form key in \{'store': 'strided'\}; "
                                         r"its form keys are batch_split, contraction"):
        policy.module_specs(problem, targets.parse_target("llvm-cpu"), options={"store": "strided"})


def test_forms_come_in_order_without_repeats_and_the_rules_form_first():
    """The CPU's rule for grouped problems puts im2col first; the generic and the other channels-last forms stay as
    fallbacks, in the operator's order."""
    from ops import catalog, policy, targets

    cpu = targets.parse_target("llvm-cpu")
    for suite in catalog.suites():
        for op, name, problem in catalog.problems(suite):
            for target in (cpu, targets.parse_target("cuda:sm_80"), targets.parse_target("rocm:gfx942")):
                forms = policy.forms_for(problem, target)
                assert len(forms) == len(set(forms)) >= 1, (op, name, target)
    grouped = catalog.problem("grouped_conv_bwd_weight", "resnext_32x4d")
    assert grouped.channels_last
    assert [f.contraction for f in policy.forms_for(grouped, cpu)] == ["im2col", "generic", "per_image_nn", "taps"]


MAX_FILE_LINES = 600


def test_no_source_file_in_ops_is_longer_than_600_lines():
    """A file over 600 lines holds several things: an operator's forms go to modules of their own (issue 47)."""
    long = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _sources("ops")
            if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES]
    assert not long, long


def test_the_math_layer_imports_no_mlir():
    """Problems, their checks, the epilogue's tree, dtypes, shape algebra, layouts, roles, the references and the
    phase plan are math: none imports ``ops.render`` or a module that does, however far (imports inside functions
    counted; an epilogue's MLIR is ``ops/epilogue_mlir.py``'s, the casts' ``render.widen``/``render.narrow``)."""
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in _sources("ops")}
    math_layer = ["problem", "problem_checks", "epilogue", "dtypes", "geometry", "layouts", "validation", "roles",
                  "reference", "sweep_params", "operators.phase_plan"]
    for name in (f"ops.{m}" for m in math_layer):
        reached, todo = set(), [name]
        while todo:
            current = todo.pop()
            for imported in _imports_of(modules[current], current, modules) - reached:
                reached.add(imported)
                todo.append(imported)
        assert "ops.render" not in reached, (name, sorted(reached))


# --- Issue 47's docs: a reference, not a work log ---------------------------------------------------------------

import re  # noqa: E402

PERFORMANCE = ROOT / "docs" / "PERFORMANCE.md"
MAX_PERFORMANCE_LINES = 500
CITING_FOLDERS = ("ops", "mlir", "build_tools", "tests")
CITING_SUFFIXES = {".py", ".mlir", ".json", ".md", ".sh", ".toml"}
ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth)"
WORK_LOG_SESSION = re.compile(ORDINAL + r" session", re.I)  # a work log's unit: no code names one
WORK_LOG_ROUND = re.compile(ORDINAL + r" round", re.I)  # a work log's unit where PERFORMANCE is near
# a quoted section name right after the file's name: docs/PERFORMANCE.md, "Launch path" / PERFORMANCE.md's 'X' /
# (`docs/PERFORMANCE.md`, "X") / PERFORMANCE.md ("X"), JSON's escaped quotes too
CITED_SECTION = re.compile(r"PERFORMANCE\.md`?(?:'s)?[,:]?\s*\(?\s*\\?[\"'“‘]([^\"'”’\\\n]+)\\?[\"'”’]")


def _headings(markdown: str) -> list[str]:
    return [line.lstrip("#").strip() for line in markdown.splitlines() if line.startswith("#")]


def _work_log_citations(text: str, headings: list[str]) -> list[str]:
    """What ``text`` cites of a work log: a session named anywhere, a round named near "PERFORMANCE", and a quoted
    PERFORMANCE.md section that no heading of the reference starts with."""
    found = [m.group(0) for m in WORK_LOG_SESSION.finditer(text)]
    found += [m.group(0) for m in WORK_LOG_ROUND.finditer(text)
              if "PERFORMANCE" in text[max(0, m.start() - 300):m.end() + 300]]
    found += [f"PERFORMANCE.md, {m.group(1)!r}" for m in CITED_SECTION.finditer(text)
              if not any(h.startswith(m.group(1)) for h in headings)]
    return found


def _citing_files() -> list[Path]:
    files = [p for folder in CITING_FOLDERS for p in sorted((ROOT / folder).rglob("*"))
             if p.suffix in CITING_SUFFIXES and p.is_file() and "__pycache__" not in p.parts]
    return [*files, ROOT / "README.md", ROOT / "docs" / "VERIFICATION.md"]


def test_the_performance_reference_is_under_500_lines():
    lines = len(PERFORMANCE.read_text().splitlines())
    assert lines < MAX_PERFORMANCE_LINES, f"docs/PERFORMANCE.md has {lines} lines; history goes to CHANGELOG.md"


def test_no_code_or_readme_cites_a_work_log_section():
    """The code, the README and VERIFICATION.md point at the reference's headings, at docs/perf's evidence, or
    state the fact."""
    headings = _headings(PERFORMANCE.read_text())
    this = Path(__file__).resolve()  # its own examples of stale citations are the check's test
    cited = {str(p.relative_to(ROOT)): found for p in _citing_files()
             if p != this and (found := _work_log_citations(p.read_text(errors="replace"), headings))}
    assert not cited, cited


def test_the_citation_check_finds_a_stale_section_and_passes_a_current_one():
    headings = _headings(PERFORMANCE.read_text())
    stale = ['see docs/PERFORMANCE.md, "Fourth session: the calling thread under `SCHED_BATCH`"',
             '(`docs/PERFORMANCE.md`, "Data movement (issue 14), first session")',
             "\"source\": \"docs/PERFORMANCE.md, 'Sixth session'; docs/perf/cpu-step/sixth/pointwise_scan.txt\"",
             "docs/PERFORMANCE.md, \"The grouped convolutions' CPU forms (issue 13)\"",
             '"source": "docs/PERFORMANCE.md, \\"Tuning (`build_tools/tune.py`), H100\\": ..."',
             "docs/PERFORMANCE.md's \"Issue 14's targets after the third session\"",
             "docs/PERFORMANCE.md, the eleventh session", "the H100 tables (PERFORMANCE.md): the third round's"]
    for text in stale:
        assert _work_log_citations(text, headings), text
    for text in ['(`docs/PERFORMANCE.md`, "Launch path")', 'docs/PERFORMANCE.md ("Data movement")',
                 'docs/PERFORMANCE.md, "CPU forms")', "docs/PERFORMANCE.md's \"The CPU training step\""]:
        assert not _work_log_citations(text, headings), text


def test_docs_perf_holds_results_not_scripts():
    """A script that still measures something is a build_tools benchmark with a smoke test; docs/perf keeps data."""
    scripts = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "perf").rglob("*")
                     if p.suffix in {".py", ".sh"})
    assert not scripts, scripts
