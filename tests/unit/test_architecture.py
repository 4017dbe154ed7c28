"""The layout rules of issue 16: metrics import no backend, no module outside a method's
own package names a method, the package has no import cycles, and mypy runs strictly
on the method and coding packages."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from biasaudit.registry import METHODS, METRICS

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "framework" / "biasaudit"


def test_no_metric_module_imports_a_backend() -> None:
    # the acceptance grep: grep -rE "import .*backends|from .*backends" framework/biasaudit/methods/*/metric*
    pattern = re.compile(r"import .*backends|from .*backends")
    files = sorted(PKG.glob("methods/*/metric*"))
    assert len(files) >= 7
    hits = [f"{f.relative_to(REPO)}:{i}" for f in files for i, line in enumerate(f.read_text().splitlines(), 1)
            if pattern.search(line)]
    assert hits == []
    # nor the embedder or the store, anywhere in a method's metric or the metrics package
    for f in [*files, *sorted((PKG / "metrics").glob("*.py"))]:
        text = f.read_text()
        assert not re.search(r"from \.+(backends|store|engine)\b|import biasaudit\.(backends|store)", text), f


def _strings_and_names(tree: ast.AST) -> list[tuple[int, str]]:
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            out.append((n.lineno, n.value))
        elif isinstance(n, ast.Name):
            out.append((n.lineno, n.id))
        elif isinstance(n, ast.ImportFrom) and n.module:
            out.append((n.lineno, n.module))
    return out


def test_no_module_outside_a_method_package_names_a_method() -> None:
    # the shipped methods and their metrics (a plug-in another test registered in this
    # process, e.g. tests/fixtures/plugin_example's `answer_chars`, is not core's business)
    names = ({n for n in METHODS.names() if METHODS.get(n).__module__.startswith("biasaudit.methods")}
             | {n for n in METRICS.names() if METRICS.get(n).compute.__module__.startswith("biasaudit.methods")})
    assert {"biaxis", "fisco", "tfdp", "nli_bias", "bias_score", "pivotal_perplexity", "token_probability"} <= names
    pat = re.compile(r"\b(" + "|".join(sorted(names)) + r")\b")
    hits = []
    for f in sorted(PKG.rglob("*.py")):
        if f.relative_to(PKG).parts[0] == "methods":
            continue
        for line, text in _strings_and_names(ast.parse(f.read_text())):
            if pat.search(text):
                hits.append(f"{f.relative_to(REPO)}:{line}: {text[:60]!r}")
    for f in sorted((PKG / "report" / "templates").glob("*.j2")):
        hits += [f"{f.name}: {m}" for m in pat.findall(f.read_text())]
    assert hits == []


def _import_graph() -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for f in PKG.rglob("*.py"):
        parts = list(f.relative_to(PKG.parent).with_suffix("").parts)
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        tree = ast.parse(f.read_text())
        typing_only = {id(sub) for n in ast.walk(tree) if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
                       for sub in ast.walk(n)}
        for n in ast.walk(tree):
            if id(n) in typing_only or not isinstance(n, ast.ImportFrom | ast.Import):
                continue
            if isinstance(n, ast.ImportFrom):
                base = m.split(".") if f.name == "__init__.py" else m.split(".")[:-1]
                if n.level:
                    base = base[: len(base) - (n.level - 1)]
                    name = ".".join(base + ([n.module] if n.module else []))
                else:
                    name = n.module or ""
                targets = [f"{name}.{a.name}" for a in n.names] + [name]
            else:
                targets = [a.name for a in n.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != m:
                    graph[m].add(t)
    return graph


def test_no_import_cycles() -> None:
    """Every import counts, those inside functions too (only TYPE_CHECKING blocks do not)."""
    graph = _import_graph()
    assert "biasaudit.cli.app" not in graph["biasaudit.runner.suite"]
    assert "biasaudit.backends.factory" not in graph["biasaudit.backends.llm_nli"]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == []


def test_stage_packages_import_only_the_stages_before_them() -> None:
    """The layer contract in pyproject.toml ([tool.importlinter]), checked by import-linter:
    records < _util < stats < spec < data < plan < backends < store < engine < coding <
    metrics < methods < verdicts < report < runner < comparison < cli < api, and no method
    package imports another's."""
    from importlinter.application.use_cases import lint_imports
    from importlinter.configuration import configure

    configure()

    assert lint_imports(config_filename=str(REPO / "pyproject.toml")) is True


def test_top_level_holds_only_the_front_doors_and_the_stage_packages() -> None:
    modules = sorted(p.name for p in PKG.glob("*.py"))
    assert modules == ["__init__.py", "_version.py", "api.py", "errors.py", "registry.py"]
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert packages == {"records", "_util", "stats", "spec", "data", "plan", "backends", "store", "engine", "coding",
                        "metrics", "methods", "verdicts", "report", "runner", "comparison", "cli"}


def test_the_method_walk_through_is_the_fixture_plugin() -> None:
    """docs/architecture.md walks through adding a method with the code of the fixture
    plugin that the tests install and run; every Python block of that section must be in
    the plugin's source, so the walk-through cannot drift from code that runs."""
    doc = (REPO / "docs" / "architecture.md").read_text()
    section = doc[doc.index("## Adding a method"):]
    section = section[: section.index("\n## ", 3)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 6
    plugin = (REPO / "tests" / "fixtures" / "plugin_method" / "biasaudit_wordcount" / "__init__.py").read_text()
    missing = [b for b in blocks if b not in plugin]
    assert missing == []
