"""Issue 39, "one writer": every file biasaudit writes outside its store goes through
`biasaudit._util.fileio` (never through a link, no device or FIFO, no unrelated file
replaced without --force, atomic). This scan of the package's syntax trees fails on any
other way to open or create a file for writing, so a new writer cannot bypass the rule.

Exempt, each for its reason (and nothing else):
- `_util/fileio.py`: the writer itself.
- `store/sqlite.py`, `backends/embedder.py`: SQLite databases (the response store and the
  embedding cache). SQLite opens, journals and locks its own files; a cache path may be a
  link to a shared disk on purpose, and a file that is no database is refused by SQLite.
- `sqlite3.connect(...)` with `mode=ro` in its URI anywhere: read only.
- Library writers named in `LIBRARY_WRITES`: each writes into a private scratch folder
  made new for it (`tempfile.mkdtemp` / `TemporaryDirectory`), moved or copied to its
  place by `fileio.publish` / `write_output_file`.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "framework" / "biasaudit"

WRITER = "_util/fileio.py"
SQLITE = {"store/sqlite.py": "the response store (SQLite's own files)",
          "backends/embedder.py": "the embedding cache, a SQLite database"}
LIBRARY_WRITES = {
    ("backends/model_files.py", "save_pretrained"): "into a tempfile.mkdtemp folder, moved in by fileio.publish",
    ("backends/gguf_exact.py", "GGUFWriter"): "into a TemporaryDirectory, moved in by fileio.publish",
}

_ALWAYS = {"write_text", "write_bytes", "touch", "mkfifo", "symlink_to", "hardlink_to", "link_to"}
_OS = {"replace", "rename", "renames", "link", "symlink", "mkfifo", "mknod", "truncate", "copy_file_range",
       "sendfile"}
_OS_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
_SHUTIL = {"copy", "copy2", "copyfile", "copyfileobj", "copytree", "move", "copymode", "copystat"}
_TEMPFILE = {"mkstemp", "NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile"}
_LIBRARY = {"savefig", "to_csv", "to_parquet", "to_excel", "to_json", "to_feather", "save_pretrained",
            "save_file", "write_pdf", "GGUFWriter", "dump_to_file"}


def _name(f: ast.expr) -> tuple[str | None, str]:
    """(`module` or None, function name) of a call's target: `os.open` -> ("os", "open")."""
    if isinstance(f, ast.Attribute):
        base = f.value.id if isinstance(f.value, ast.Name) else None
        return base, f.attr
    if isinstance(f, ast.Name):
        return None, f.id
    return None, ""


def _mode(call: ast.Call, pos: int) -> str | None:
    """The call's mode argument as a constant ("" when it is not a constant; None when absent)."""
    arg = call.args[pos] if len(call.args) > pos else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if arg is None:
        return None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""


def _writes(mode: str | None) -> bool:
    """A mode that writes ("" stands for one that is not a constant: it may)."""
    return mode is not None and (mode == "" or any(c in mode for c in "wax+"))


def _flag_names(node: ast.expr) -> set[str]:
    return {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(node)
            if isinstance(n, ast.Attribute | ast.Name)}


def _read_only_uri(arg: ast.expr) -> bool:
    parts = [arg] if isinstance(arg, ast.Constant) else arg.values if isinstance(arg, ast.JoinedStr) else []
    return any(isinstance(p, ast.Constant) and "mode=ro" in str(p.value) for p in parts)


def _writer_handles(tree: ast.AST) -> set[str]:
    """Names bound by `with open_output(...) as NAME`: a handle the writer opened."""
    return {item.optional_vars.id for node in ast.walk(tree) if isinstance(node, ast.With | ast.AsyncWith)
            for item in node.items
            if isinstance(item.context_expr, ast.Call) and _name(item.context_expr.func)[1] == "open_output"
            and isinstance(item.optional_vars, ast.Name)}


def violations(rel: str, source: str) -> list[str]:
    """Each write that bypasses the one writer in one module, as `file:line: what`."""
    if rel == WRITER:
        return []
    tree = ast.parse(source)
    handles = _writer_handles(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        mod, fn = _name(node.func)
        bad = None
        if fn == "open" and mod is None and _writes(_mode(node, 1)):
            bad = "open() for writing"
        elif fn == "open" and mod == "os" and len(node.args) > 1 and _flag_names(node.args[1]) & _OS_WRITE_FLAGS:
            bad = "os.open with write flags"
        elif fn == "open" and mod not in ("os", "zf", "tarfile", "webbrowser") and isinstance(node.func, ast.Attribute) \
                and _writes(_mode(node, 0)):
            bad = "Path.open() for writing"
        elif fn == "fdopen" and _writes(_mode(node, 1)):
            bad = "os.fdopen for writing"
        elif fn in _ALWAYS and isinstance(node.func, ast.Attribute):
            bad = f".{fn}()"
        elif mod == "os" and fn in _OS:
            bad = f"os.{fn}"
        elif fn in ("replace", "rename") and mod != "os" and isinstance(node.func, ast.Attribute) \
                and len(node.args) == 1 and not node.keywords:
            bad = f"Path.{fn}() (a move into a path)"
        elif (mod == "shutil" and fn in _SHUTIL) or (mod is None and fn in ("copyfile", "copy2", "copytree")):
            bad = f"shutil.{fn}"
        elif fn in _TEMPFILE and (mod in ("tempfile", None)):
            bad = f"tempfile.{fn}"
        elif fn == "ZipFile" and _writes(_mode(node, 1)) and not (
                node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in handles):
            bad = "ZipFile in write mode (not over a handle from fileio.open_output)"
        elif fn == "open" and mod == "tarfile" and _writes(_mode(node, 1)):
            bad = "tarfile.open for writing"
        elif fn == "connect" and mod == "sqlite3" and rel not in SQLITE and not (
                node.args and _read_only_uri(node.args[0])):
            bad = "sqlite3.connect (not read-only)"
        elif fn in _LIBRARY and node.args and (rel, fn) not in LIBRARY_WRITES and not (
                fn == "savefig" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "buf"):
            bad = f"{fn}() writes a file"
        elif fn == "dump" and mod in ("json", "yaml", "pickle") and len(node.args) > 1:
            bad = f"{mod}.dump to a file"
        if bad:
            out.append(f"{rel}:{node.lineno}: {bad}")
    return out


def test_one_writer() -> None:
    files = sorted(PKG.rglob("*.py"))
    assert len(files) > 100
    found = [v for f in files for v in violations(f.relative_to(PKG).as_posix(), f.read_text(encoding="utf-8"))]
    assert found == [], ("files written outside biasaudit._util.fileio (the one writer; see its docstring): "
                         + "; ".join(found))


def test_the_exemptions_are_real() -> None:
    # an exemption for a module that is gone, or no longer needs it, is dropped
    for rel in SQLITE:
        assert "sqlite3.connect" in (PKG / rel).read_text(encoding="utf-8"), rel
    for (rel, fn) in LIBRARY_WRITES:
        assert fn in (PKG / rel).read_text(encoding="utf-8"), (rel, fn)


def test_the_scan_catches_each_kind_of_write() -> None:
    # each bypass the scan is there to catch, in a module that is not the writer
    cases = {
        'open(p, "w")': "open() for writing",
        'open(p, mode="ab")': "open() for writing",
        "open(p, m)": "open() for writing",
        'Path(p).open("w", encoding="utf-8")': "Path.open() for writing",
        "p.write_text('x')": ".write_text()",
        "p.write_bytes(b'x')": ".write_bytes()",
        "p.touch()": ".touch()",
        "shutil.copyfile(a, b)": "shutil.copyfile",
        "shutil.move(a, b)": "shutil.move",
        "os.replace(a, b)": "os.replace",
        "tmp.replace(target)": "Path.replace()",
        "os.open(p, os.O_WRONLY | os.O_CREAT)": "os.open with write flags",
        'os.fdopen(fd, "wb")': "os.fdopen for writing",
        'zipfile.ZipFile(p, "w")': "ZipFile in write mode",
        "tempfile.mkstemp(dir=d)": "tempfile.mkstemp",
        "json.dump(obj, f)": "json.dump to a file",
        "sqlite3.connect(str(p))": "sqlite3.connect",
        "df.to_csv(p)": "to_csv() writes a file",
    }
    for code, what in cases.items():
        found = violations("report/x.py", code)
        assert len(found) == 1 and what in found[0], (code, found)
    # and lets these pass: reads, text edits, a zip over the writer's handle, read-only SQLite
    fine = ['open(p)', 'open(p, "rb")', 'p.open("rb")', '"a-b".replace("-", "_")', 'zipfile.ZipFile(p)',
            'zf.open(info)', 'sqlite3.connect(f"{u}?mode=ro", uri=True)', "fig.savefig(buf, format='svg')",
            'with open_output(t, "wb", key="k") as raw, zipfile.ZipFile(raw, "w") as z:\n    pass']
    for code in fine:
        assert violations("report/x.py", code) == [], code
    assert violations(WRITER, 'open(p, "w")') == []
