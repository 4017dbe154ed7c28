"""Issue 39, "one trail reader and writer": every JSON-lines file is written and read by
framework/biasaudit/_util/trail.py, which splits on "\\n" only. This scan fails on any
other line splitting (`splitlines(`, `readlines(`, `readline(`, `.split("\\n")`), any
JSON line written by hand (`json.dumps(...) + "\\n"`, `"\\n".join(json.dumps(...) ...)`)
and any `json.loads` of a loop's own variable (a line of a file read by hand) anywhere
else in the package. Code that splits text that is no trail is allowed below, with why."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "framework" / "biasaudit"
TRAIL = PKG / "_util" / "trail.py"

# (file relative to the package, enclosing function): why it may split lines itself
ALLOWED: dict[tuple[str, str], str] = {
    # the first line of an exception's message, for a one-line error: not a file's records
    **{(f, fn): "first line of an exception's message" for f, fn in [
        ("spec/yaml_bounds.py", "*"), ("spec/interp.py", "*"), ("spec/compose.py", "*"),
        ("runner/power.py", "*"), ("runner/sweeps.py", "*"), ("runner/evidence/verify.py", "_check_run"),
        ("api.py", "*"), ("cli/run.py", "*"), ("backends/hf_masked.py", "*"), ("backends/hf_causal.py", "*"),
        ("backends/openai_compat.py", "*"), ("backends/served.py", "*"), ("backends/hf_nli.py", "*"),
        ("store/sqlite.py", "*"), ("report/pdf.py", "*"), ("spec/override_gate.py", "_parse")]},
    ("runner/evidence/signing.py", "_watch_pem"): "a PEM key's base64 lines, each watched as a secret",
    ("report/render.py", "md_lines"): "free text of the spec (audit.scope) shown as Markdown lines",
    ("cli/catalog.py", "_first_comment"): "a shipped config file's leading comment",
    ("coding/coders/claims.py", "parse_claim_list"): "a model's list of claims, one per line of its answer",
    ("backends/managed_engine.py", "log_tail"): "the engine log's last lines for an error message",
    ("runner/evidence/verify.py", "_check_trail"): "compares lines split_lines gave, as JSON",
    ("comparison/runs.py", "sweep_stability"): "JSON keys of a dict of settings, not lines of a file",
}


def _func_of(tree: ast.AST) -> dict[int, str]:
    """Node id -> the name of the innermost function holding it ("*" at module level)."""
    out: dict[int, str] = {}

    def walk(node: ast.AST, name: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else name
            out[id(child)] = inner
            walk(child, inner)

    walk(tree, "*")
    return out


def _is_json(call: ast.AST, fn: str) -> bool:
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == fn
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "json")


def _newline(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in ("\n", b"\n")


def violations(source: str, rel: str) -> list[str]:
    """What in `source` (a module of the package, `rel` its path in it) reads or writes
    JSON lines by hand."""
    tree = ast.parse(source)
    func = _func_of(tree)
    found: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr == "splitlines":
                found.append((node, "splitlines() splits at every Unicode line break"))
            elif attr in ("readlines", "readline"):
                found.append((node, f"{attr}() reads lines by hand (in text mode it splits at \\r too)"))
            elif attr == "split" and node.args and _newline(node.args[0]):
                found.append((node, 'split("\\n") of a trail by hand'))
            elif (attr == "join" and _newline(node.func.value) and node.args
                  and any(_is_json(n, "dumps") for n in ast.walk(node.args[0]))):
                found.append((node, '"\\n".join(json.dumps(...)) writes JSON lines by hand'))
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _newline(node.right)
              and _is_json(node.left, "dumps") and isinstance(node.left, ast.Call)
              and not any(k.arg == "indent" for k in node.left.keywords)):  # indent: a whole document
            found.append((node, 'json.dumps(...) + "\\n" writes a JSON line by hand'))
        elif isinstance(node, ast.For | ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            loops = [node] if isinstance(node, ast.For) else node.generators
            names = {n.id for g in loops for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            scope: list[ast.AST] = (list(node.body) if isinstance(node, ast.For)
                                    else [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
            for part in scope:
                for n in ast.walk(part):
                    if (_is_json(n, "loads") and isinstance(n, ast.Call) and n.args
                            and isinstance(n.args[0], ast.Name) and n.args[0].id in names):
                        found.append((n, "json.loads of each line of a file read by hand"))
    out = []
    for node, why in found:
        fn = func.get(id(node), "*")
        if (rel, fn) in ALLOWED or (rel, "*") in ALLOWED:
            continue
        out.append(f"framework/biasaudit/{rel}:{getattr(node, 'lineno', 0)} ({fn}): {why}; "
                   "use biasaudit._util.trail (or allow it in tests/unit/test_architecture_trail.py, with why)")
    return out


def test_every_trail_goes_through_the_trail_module() -> None:
    hits = []
    for f in sorted(PKG.rglob("*.py")):
        if f == TRAIL:
            continue
        hits += violations(f.read_text(encoding="utf-8"), f.relative_to(PKG).as_posix())
    assert hits == [], "\n".join(hits)


def test_every_allowance_is_still_needed() -> None:
    """An allowance whose code went away is removed, so it cannot hide a new reader."""
    for (rel, fn), why in ALLOWED.items():
        assert why and (PKG / rel).is_file(), rel
        if fn != "*":
            assert f"def {fn}(" in (PKG / rel).read_text(encoding="utf-8"), (rel, fn)


def test_the_scan_catches_each_kind_of_bypass() -> None:
    bad = {
        "for line in path.read_text().splitlines():\n    rows.append(line)\n": "splitlines()",
        "rows = f.readlines()\n": "readlines()",
        "rows = [json.loads(x) for x in text.split('\\n')]\n": 'split("\\n")',
        "with open(p) as f:\n    for line in f:\n        rows.append(json.loads(line))\n": "json.loads of each line",
        "rows = [json.loads(line) for line in f]\n": "json.loads of each line",
        "f.write(json.dumps(row, ensure_ascii=False) + '\\n')\n": 'json.dumps(...) + "\\n"',
        "text = '\\n'.join(json.dumps(r) for r in rows)\n": '"\\n".join(json.dumps(...))',
    }
    for source, says in bad.items():
        hits = violations(source, "runner/new_reader.py")
        assert any(says in h and "runner/new_reader.py:" in h for h in hits), (source, hits)
    # the trail module's own calls, and a whole JSON document, pass
    assert violations("for i, row in json_records(raw, file=name):\n    use(row)\n"
                      "text = json.dumps(doc, indent=2) + '\\n'\n", "runner/x.py") == []
