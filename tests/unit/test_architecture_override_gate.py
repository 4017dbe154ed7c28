"""The one command-line gate (issue 39): no override reaches Hydra without passing
`biasaudit.spec.override_gate.gate`.

The guarantee is a type: Hydra's composition (`compose_dict`), the validated config's
overrides (`to_audit_config`, what the manifest and the re-run line are built from) and
`@hydra.main` (`cli/run.py::_hydra_main`) take only `GatedOverrides`, and only the gate
constructs one. This test keeps it so: a new call of Hydra's compose API, `@hydra.main`,
Hydra's override application or `sys.argv` in a function without a `GatedOverrides`
parameter, or a `GatedOverrides(...)` made outside the gate, fails it."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "framework" / "biasaudit"

HYDRA_ENTRY = {"compose", "initialize", "initialize_config_dir", "initialize_config_module", "main",
               "_apply_overrides_to_config"}
"""Hydra's ways in: its compose API, `@hydra.main` (which reads `sys.argv`), and the
function that applies parsed overrides to a composed config."""


def _annotated_gated(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    return any(a.annotation is not None and "GatedOverrides" in ast.unparse(a.annotation) for a in args)


def gate_violations(root: Path) -> list[str]:
    """Every place under `root` that reaches Hydra, or makes `GatedOverrides`, outside the gate's rules."""
    problems = []
    for f in sorted(root.rglob("*.py")):
        problems += _file_violations(f.relative_to(root).as_posix(), ast.parse(f.read_text(encoding="utf-8")))
    return problems


def _file_violations(rel: str, tree: ast.AST) -> list[str]:
    problems = []
    parents: dict[int, ast.AST] = {}
    for p in ast.walk(tree):
        for c in ast.iter_child_nodes(p):
            parents[id(c)] = p

    def enclosing(node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        p = parents.get(id(node))
        while p is not None and not isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef):
            p = parents.get(id(p))
        return p

    # names bound to Hydra's entry points by `from hydra import ...` (any alias), per scope:
    # an import inside a function binds them there, a module-level one everywhere
    bound: dict[int | None, set[str]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] == "hydra":
            scope = enclosing(n)
            bound.setdefault(id(scope) if scope else None, set()).update(
                a.asname or a.name for a in n.names if a.name in HYDRA_ENTRY)

    def hydra_name(call: ast.Call, name: str) -> bool:
        scopes: list[int | None] = [None]
        p: ast.AST | None = enclosing(call)
        while p is not None:
            scopes.append(id(p))
            p = enclosing(p)
        return any(name in bound.get(s, set()) for s in scopes)

    for n in ast.walk(tree):
        what = None
        if isinstance(n, ast.Call):
            fn = n.func
            if isinstance(fn, ast.Name) and fn.id == "GatedOverrides" and rel != "spec/override_gate.py":
                problems.append(f"{rel}:{n.lineno}: GatedOverrides(...) made outside spec/override_gate.py")
                continue
            if isinstance(fn, ast.Name) and hydra_name(n, fn.id):
                what = fn.id
            elif isinstance(fn, ast.Attribute) and fn.attr in HYDRA_ENTRY and (
                    (isinstance(fn.value, ast.Name) and fn.value.id in ("hydra", "ConfigLoaderImpl"))
                    or fn.attr == "_apply_overrides_to_config"):
                what = ast.unparse(fn)
        elif isinstance(n, ast.Assign) and any(ast.unparse(t) == "sys.argv" for t in n.targets):
            what = "sys.argv ="
        if what is None:
            continue
        fn_def = enclosing(n)
        if fn_def is None or not _annotated_gated(fn_def):
            name = fn_def.name if fn_def is not None else "<module>"
            problems.append(f"{rel}:{n.lineno}: {what} in {name}() whose overrides are not GatedOverrides "
                            "(pass them through biasaudit.spec.override_gate.gate and take GatedOverrides)")
    return problems


def test_every_way_into_hydra_takes_gated_overrides() -> None:
    assert gate_violations(PKG) == []


def test_the_rule_sees_the_ways_in() -> None:
    """The places it checks exist (the test is not vacuous): compose_dict, _compose_shared, _hydra_main."""
    seen = []
    for rel in ("spec/compose.py", "cli/run.py"):
        tree = ast.parse((PKG / rel).read_text(encoding="utf-8"))
        seen += [fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and _annotated_gated(fn)]
    assert {"compose_dict", "_compose_shared", "_hydra_main", "to_audit_config"} <= set(seen)


def test_a_bypass_is_caught(tmp_path: Path) -> None:
    """A module composing raw overrides, and one forging GatedOverrides, are both reported."""
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "sneaky.py").write_text(
        "from hydra import compose as c, initialize_config_dir\n"
        "import sys, hydra\n"
        "def f(overrides: list[str]):\n"
        "    with initialize_config_dir(config_dir='x'):\n"
        "        return c('config', overrides=overrides)\n"
        "def g(overrides):\n"
        "    sys.argv = ['x', *overrides]\n"
        "    hydra.main(config_path='x')(print)()\n"
        "def h(o):\n"
        "    from biasaudit.spec.override_gate import GatedOverrides\n"
        "    return GatedOverrides(o, o, _token=None)\n", encoding="utf-8")
    found = gate_violations(tmp_path)
    assert len(found) == 5, found
    assert any("initialize_config_dir in f()" in p for p in found) and any("c in f()" in p for p in found)
    assert any("sys.argv = in g()" in p for p in found) and any("hydra.main in g()" in p for p in found)
    assert any("GatedOverrides(...) made outside" in p for p in found)


def test_gated_overrides_cannot_be_forged_at_run_time() -> None:
    import pytest

    from biasaudit.spec.compose import compose_dict
    from biasaudit.spec.override_gate import GatedOverrides

    with pytest.raises(TypeError):
        GatedOverrides(["+hydra.callbacks.x._target_=os.system"], [], _token=object())
    with pytest.raises(TypeError):
        compose_dict(["+hydra.callbacks.x._target_=os.system"])  # type: ignore[arg-type]
