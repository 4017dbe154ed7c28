"""Core code never branches on a coder's name (issue 40, section 2): what a coder is
(human labels, a panel of raters, a validity flag of its own, a span a later layer
strips) is read from its `CoderDef` and its evidence record, so a plug-in coder gets
the same treatment as a shipped one. Only a coder's own module and the method packages
may compare a value with a coder's name, or import a shipped coder's module."""

from __future__ import annotations

import ast
from pathlib import Path

from biasaudit.registry import CODERS

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "framework" / "biasaudit"


HOLDERS = {"coder_name", "coder", "source"}
"""Attributes that hold a coder's name."""


def _core_files() -> list[Path]:
    out = []
    for f in sorted(PKG.rglob("*.py")):
        parts = f.relative_to(PKG).parts
        if parts[0] == "methods" or parts[:2] == ("coding", "coders"):
            continue
        out.append(f)
    return out


def _names_in(node: ast.expr) -> list[str]:
    """String constants in a comparison operand (a literal, or a set/tuple/list/frozenset of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Set | ast.Tuple | ast.List):
        return [n.value for n in node.elts if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    if isinstance(node, ast.Call) and node.args:
        return _names_in(node.args[0])
    return []


def test_no_core_module_compares_with_a_coder_name() -> None:
    names = set(CODERS.names())
    assert {"rules", "human", "judge_panel", "choice"} <= names
    hits = []
    for f in _core_files():
        tree = ast.parse(f.read_text(encoding="utf-8"))
        consts: dict[str, ast.expr] = {}  # NAME = frozenset({...}) compared with later
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                consts[n.targets[0].id] = n.value
        for n in ast.walk(tree):
            if not isinstance(n, ast.Compare):
                continue
            sides = [n.left, *n.comparators]
            # a comparison of what holds a coder's name (`lay.coder_name`, a summary's
            # `lay.coder`, a code's `source`) with a literal name ("choice" is also a
            # request kind: only these operands count)
            if not any(isinstance(x, ast.Attribute) and x.attr in HOLDERS for x in sides):
                continue
            for side in sides:
                side = consts.get(side.id, side) if isinstance(side, ast.Name) else side
                found = sorted(set(_names_in(side)) & names)
                if found:
                    hits.append(f"{f.relative_to(REPO)}:{n.lineno}: compares with coder name(s) {found}")
    assert hits == []


def test_no_core_module_imports_a_shipped_coders_module() -> None:
    hits = []
    for f in _core_files():
        tree = ast.parse(f.read_text(encoding="utf-8"))
        typing_only = {id(sub) for n in ast.walk(tree) if isinstance(n, ast.If)
                       and getattr(n.test, "id", "") == "TYPE_CHECKING" for sub in ast.walk(n)}
        for n in ast.walk(tree):
            if id(n) in typing_only:
                continue
            mods = [n.module or ""] if isinstance(n, ast.ImportFrom) else \
                [a.name for a in n.names] if isinstance(n, ast.Import) else []
            hits += [f"{f.relative_to(REPO)}:{n.lineno}: imports {m}" for m in mods
                     if m.startswith("biasaudit.coding.coders.")]
    assert hits == []


def _kind_names_in_core() -> list[str]:
    """Every string literal in core modules that is the name of a registered NLI
    classifier or embedder, outside the modules that define and register those kinds."""
    from biasaudit.registry import EMBEDDERS, NLI_KINDS

    kinds = {**{n: k for n, k in NLI_KINDS.items()}, **{n: k for n, k in EMBEDDERS.items()}}
    owners = {Path(__import__("inspect").getfile(k.config)).resolve() for k in kinds.values()}
    hits = []
    for f in sorted(PKG.rglob("*.py")):
        if f.resolve() in owners:
            continue
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in kinds:
                hits.append(f"{f.relative_to(REPO)}:{n.lineno}: names the {n.value!r} kind")
    return hits


def test_no_core_module_names_an_nli_classifier_or_an_embedder() -> None:
    """What an NLI classifier or embedder can do (ask a chat model, be the audited model,
    answer the classifier route, be the default embedder) is read from its registered
    kind: only the module that defines and registers a kind may write its name, so a
    plug-in kind is treated as a shipped one (the acceptance grep of issue 40's NLI and
    embedder task, `grep -rn '"hf_nli"\\|"llm_nli"' framework/biasaudit`, as a test)."""
    from biasaudit.registry import EMBEDDERS, NLI_KINDS

    assert {"hf_nli", "llm_nli"} <= set(NLI_KINDS.names()) and "sentence_transformers" in EMBEDDERS.names()
    assert _kind_names_in_core() == []
