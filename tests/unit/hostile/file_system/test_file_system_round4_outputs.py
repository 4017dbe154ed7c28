"""Issue 39 red team (round 4): the output path of every command that writes one.

`view --out`, `pack -o`, `annotate export -o`, `run --junit`, the `merge-cache` target
(files), `compare --out` and `init DIR` (folders), and what `report` and `view` write
inside a run folder, each given a hostile path: a symlink to an unrelated file, a dangling
link, a link to a folder, a link through a parent folder, an existing unrelated file, a
FIFO, a folder, a device, a path under /proc or /sys, a name too long for the file
system, names holding a newline, NUL or bidi/unicode characters.

The safe outcome (one rule, issue 39's "one writer"): exit 0 with the file written at the
path itself, or one line `error: ... (hint: ...)` with exit 2; never a traceback; a file
the path (or a link on it) leads to that biasaudit did not write is left byte for byte;
a link never has its target created or replaced; a FIFO or device stays what it was.

`XFAIL` and `INSIDE_XFAIL` list the cases that failed before issue 39's one writer (a
module that never writes through a link and never replaces an unrelated file without
--force); all of them pass now, with no mark."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import finished_run, spec_and_operator, tp_spec
from tests.unit.hostile._cases import KEY_ENV, SECRET, assert_no_leak, error_lines

VICTIM = b"VICTIM: a file biasaudit did not write\n"

WRITER = "issue 39 item 2/4 (one writer: never through a link, no unrelated file replaced), fixed on branch wt-writer"

GEN_SPEC = """
audit: {name: rt4-out, method: label_rates}
stimuli:
  inline:
    - {id: s1, statement: "Group A is lazy.", category: a}
    - {id: s2, statement: "Group B is loud.", category: b}
  id_field: id
probe: {kind: generate, max_tokens: 20, prompt: "{{ statement }}"}
coding:
  refusal:
    coder: rules
    labels: [refuse, answer]
    otherwise: answer
    rules: [{keywords: ["sorry"], label: refuse}]
metrics:
  - {name: label_rate, id: refusal_rate, layer: refusal, labels: [refuse]}
model:
  backend: scripted
  name: subject
  script: {replies: {"Group A": "I'm sorry, no.", "Group B": "Yes."}}
"""


@dataclass(frozen=True)
class Source:
    tp_run: Path
    gen_run: Path
    cache: Path
    spec: Path


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Source:
    """A finished token-probability run, a finished generate run with a rules layer, and
    the cache holding both (made once for the module, never written by a case)."""
    import contextlib
    import io

    from biasaudit.cli.app import main

    def cli(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return code, out.getvalue(), err.getvalue()

    w = tmp_path_factory.mktemp("rt4-source")
    (w / "reports").mkdir()
    spec = tp_spec(w, 3)
    assert cli("run", "--fail-on", "never", f"spec={spec}", "model=scripted", *isolation(w))[0] == 0
    [tp_run] = run_dirs(w)
    g = w / "gen"
    g.mkdir()
    (g / "reports").mkdir()
    gspec, ops = spec_and_operator(g / "gen.yaml", GEN_SPEC)
    gen_run = finished_run(g, cli, gspec, ops)
    return Source(tp_run, gen_run, w / "cache.sqlite", spec)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setenv("BIASAUDIT_CHROMIUM", "/nonexistent")  # no PDF: packs stay fast


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path (a UNIX socket's and a 255-byte name's parent)."""
    d = Path(tempfile.mkdtemp(prefix="rt4", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


# -- what a case gives: a path, and the file that must not change ---------------------------

@dataclass
class Target:
    path: str
    guarded: Path | None = None
    """A file biasaudit did not write: must keep its bytes (or stay absent)."""
    absent: Path | None = None
    """A path that must not come to exist (a dangling link's target)."""
    kind: int | None = None
    """The st_mode file type the path must keep (a FIFO, a device)."""


def _victim(d: Path) -> Path:
    v = d / "victim.txt"
    v.write_bytes(VICTIM)
    return v


def _link_to_victim(d: Path, name: str) -> Target:
    v = _victim(d)
    (d / name).symlink_to(v)
    return Target(str(d / name), guarded=v)


def _dangling(d: Path, name: str) -> Target:
    (d / name).symlink_to(d / "made-through-link")
    return Target(str(d / name), absent=d / "made-through-link")


def _link_to_dir(d: Path, name: str) -> Target:
    (d / "elsewhere").mkdir()
    (d / name).symlink_to(d / "elsewhere")
    return Target(str(d / name))


def _existing(d: Path, name: str) -> Target:
    v = d / name
    v.write_bytes(VICTIM)
    return Target(str(v), guarded=v)


def _fifo(d: Path, name: str) -> Target:
    os.mkfifo(d / name)
    return Target(str(d / name), kind=stat.S_IFIFO)


def _dir(d: Path, name: str) -> Target:
    (d / name).mkdir()
    keep = d / name / "keep.txt"
    keep.write_bytes(VICTIM)
    return Target(str(d / name), guarded=keep)


def _parent_link(d: Path, name: str) -> Target:
    """`via/<name>` where `via` is a link to a folder holding an unrelated `<name>`."""
    (d / "real").mkdir()
    v = d / "real" / name
    v.write_bytes(VICTIM)
    (d / "via").symlink_to(d / "real")
    return Target(str(d / "via" / name), guarded=v)


def _long(d: Path, name: str) -> Target:
    return Target(str(d / ("x" * 300 + name)))


def _newline(d: Path, name: str) -> Target:
    return Target(str(d / f"a\nb-{name}"))


def _unicode(d: Path, name: str) -> Target:
    return Target(str(d / f"r\u00e9sum\u00e9-\u202egnp-\u540d-{name}"))


def _nul(d: Path, name: str) -> Target:
    """A NUL byte cannot come from a shell, but does from the Python API (main(argv))."""
    return Target(str(d / f"a\x00{name}"))


def _fixed(path: str) -> Callable[[Path, str], Target]:
    def build(d: Path, name: str) -> Target:
        return Target(path, kind=stat.S_IFMT(os.stat(path).st_mode) if os.path.exists(path) else None)
    return build


KINDS: dict[str, Callable[[Path, str], Target]] = {
    "link-to-unrelated-file": _link_to_victim,
    "dangling-link": _dangling,
    "link-to-folder": _link_to_dir,
    "existing-unrelated-file": _existing,
    "fifo": _fifo,
    "folder": _dir,
    "link-through-parent-folder": _parent_link,
    "name-too-long": _long,
    "newline-in-name": _newline,
    "unicode-bidi-name": _unicode,
    "nul-in-name": _nul,
    "dev-full": _fixed("/dev/full"),
    "dev-zero": _fixed("/dev/zero"),
    "proc-self": _fixed("/proc/self/rt4-out"),
    "sys-kernel": _fixed("/sys/kernel/rt4-out"),
}

# (command, kind) pairs that fail on main today, with the branch that fixes them.
XFAIL: dict[tuple[str, str], str] = {
    ("view", "link-to-unrelated-file"): WRITER,
    ("view", "dangling-link"): WRITER,
    ("view", "existing-unrelated-file"): WRITER,
    ("view", "link-through-parent-folder"): WRITER,
    ("junit", "link-to-unrelated-file"): WRITER,
    ("junit", "dangling-link"): WRITER,
    ("junit", "existing-unrelated-file"): WRITER,
    ("junit", "link-through-parent-folder"): WRITER,
    ("merge-cache", "dangling-link"): WRITER,
    ("annotate", "dangling-link"): WRITER,  # round 4: the sheet is created at the dangling link's target
}

Command = Callable[[Source, str, Path], list[str]]


def _junit(s: Source, path: str, w: Path) -> list[str]:
    shutil.copy(s.cache, w / "cache.sqlite")  # every call answered from the cache
    (w / "reports").mkdir(exist_ok=True)
    return ["run", "--fail-on", "never", f"spec={s.spec}", "model=scripted", *isolation(w), "--junit", path]


FILE_COMMANDS: dict[str, tuple[Command, str]] = {
    "view": (lambda s, p, w: ["view", str(s.tp_run), "--out", p], "page.html"),
    "pack": (lambda s, p, w: ["pack", str(s.tp_run), "-o", p], "audit.zip"),
    "annotate": (lambda s, p, w: ["annotate", "export", str(s.gen_run), "--layer", "refusal", "-o", p], "sheet.csv"),
    "junit": (_junit, "junit.xml"),
    "merge-cache": (lambda s, p, w: ["merge-cache", p, str(s.cache)], "merged.sqlite"),
}

FOLDER_COMMANDS: dict[str, tuple[Command, str]] = {
    "compare": (lambda s, p, w: ["compare", str(s.tp_run), "--out", p], "cmp"),
    "init": (lambda s, p, w: ["init", p], "proj"),
}
FOLDER_KINDS = ["link-to-unrelated-file", "dangling-link", "existing-unrelated-file", "fifo", "name-too-long",
                "newline-in-name", "unicode-bidi-name", "nul-in-name", "dev-full", "proc-self", "sys-kernel"]


def _check(code: int, out: str, err: str, t: Target, w: Path) -> None:
    """The safe outcome (module docstring)."""
    assert "Traceback" not in err, err
    if code != 0:
        lines = error_lines(err)
        assert code == 2, (code, err)
        assert len(lines) == 1 and lines[0].startswith("error: ") and "hint:" in lines[0], err
    if t.guarded is not None:
        assert t.guarded.read_bytes() == VICTIM, "an unrelated file was overwritten"
    if t.absent is not None:
        assert not os.path.lexists(t.absent), "a dangling link's target was created"
    if t.kind is not None and os.path.exists(t.path):
        assert stat.S_IFMT(os.stat(t.path).st_mode) == t.kind, "a FIFO or device was replaced"
    assert_no_leak(w, out, err)


def _params(commands: dict[str, tuple[Command, str]], kinds: list[str]) -> list[object]:
    out: list[object] = []
    for c in commands:
        for k in kinds:
            out.append(pytest.param(c, k, id=f"{c}:{k}"))
    return out


@pytest.mark.parametrize("command, kind", _params(FILE_COMMANDS, list(KINDS)))
def test_a_hostile_output_file_path_is_written_safely_or_refused(source: Source, short_dir: Path, cli,  # type: ignore[no-untyped-def]
                                                                 command: str, kind: str) -> None:
    build, name = FILE_COMMANDS[command]
    t = KINDS[kind](short_dir, name)
    code, out, err = cli(*build(source, t.path, short_dir))
    _check(code, out, err, t, short_dir)
    if kind in ("fifo", "folder", "dev-full", "dev-zero", "proc-self", "sys-kernel", "link-to-folder"):
        assert code == 2, f"{kind} accepted as an output file"


@pytest.mark.parametrize("command, kind", _params(FOLDER_COMMANDS, FOLDER_KINDS))
def test_a_hostile_output_folder_path_is_written_safely_or_refused(source: Source, short_dir: Path, cli,  # type: ignore[no-untyped-def]
                                                                   command: str, kind: str) -> None:
    build, name = FOLDER_COMMANDS[command]
    t = KINDS[kind](short_dir, name)
    code, out, err = cli(*build(source, t.path, short_dir))
    _check(code, out, err, t, short_dir)
    if kind in ("link-to-unrelated-file", "existing-unrelated-file", "fifo", "dev-full", "proc-self", "sys-kernel"):
        assert code == 2, f"{kind} accepted as an output folder"


# -- files written inside a folder the user names -----------------------------------------------

def _copy_run(run: Path, d: Path) -> Path:
    r = d / "run"
    shutil.copytree(run, r, symlinks=True)
    return r


def _planted_in_run(member: str) -> Callable[[Source, Path], tuple[list[str], Path]]:
    """`report RUN` (or `view RUN`) with RUN/<member> a link to an unrelated file."""
    def build(s: Source, d: Path) -> tuple[list[str], Path]:
        r = _copy_run(s.tp_run, d)
        (r / member).unlink(missing_ok=True)
        v = _victim(d)
        (r / member).symlink_to(v)
        return (["view", str(r)] if member == "viewer.html" else ["report", str(r)]), v
    return build


def _compare_inner(s: Source, d: Path) -> tuple[list[str], Path]:
    v = _victim(d)
    (d / "cmp").mkdir()
    (d / "cmp" / "compare.html").symlink_to(v)
    return ["compare", str(s.tp_run), "--out", str(d / "cmp")], v


def _init_force(member: str) -> Callable[[Source, Path], tuple[list[str], Path]]:
    def build(s: Source, d: Path) -> tuple[list[str], Path]:
        v = _victim(d)
        (d / "proj").mkdir()
        (d / "proj" / member).symlink_to(v)
        return ["init", str(d / "proj"), "--force"], v
    return build


def _sidecar(name: str, force: bool) -> Callable[[Source, Path], tuple[list[str], Path]]:
    """The sheet's sampling record (`<sheet>.sample.json`) is a link to an unrelated file."""
    def build(s: Source, d: Path) -> tuple[list[str], Path]:
        v = _victim(d)
        (d / name).symlink_to(v)
        return ["annotate", "export", str(s.gen_run), "--layer", "refusal", "-o", str(d / "sheet.csv"),
                *(["--force"] if force else [])], v
    return build


def _pack_force_link(s: Source, d: Path) -> tuple[list[str], Path]:
    v = _victim(d)
    (d / "audit.zip").symlink_to(v)
    return ["pack", str(s.tp_run), "-o", str(d / "audit.zip"), "--force"], v


def _annotate_force_link(s: Source, d: Path) -> tuple[list[str], Path]:
    v = _victim(d)
    (d / "sheet.csv").symlink_to(v)
    return ["annotate", "export", str(s.gen_run), "--layer", "refusal", "-o", str(d / "sheet.csv"), "--force"], v


def _cache_link(s: Source, d: Path) -> tuple[list[str], Path]:
    v = _victim(d)
    (d / "c.sqlite").symlink_to(v)
    (d / "reports").mkdir()
    return ["run", f"spec={s.spec}", "model=scripted", f"runtime.cache={d / 'c.sqlite'}",
            f"runtime.reports_dir={d / 'reports'}", "runtime.progress=false"], v


def _reports_link_to_file(s: Source, d: Path) -> tuple[list[str], Path]:
    v = _victim(d)
    (d / "reports").symlink_to(v)
    return ["run", f"spec={s.spec}", "model=scripted", f"runtime.cache={d / 'c.sqlite'}",
            f"runtime.reports_dir={d / 'reports'}", "runtime.progress=false"], v


INSIDE: dict[str, Callable[[Source, Path], tuple[list[str], Path]]] = {
    "report: report.html a link": _planted_in_run("report.html"),
    "report: summary.json a link": _planted_in_run("summary.json"),
    "report: estimates.csv a link": _planted_in_run("estimates.csv"),
    "report: items.csv a link": _planted_in_run("items.csv"),
    "view RUN: viewer.html a link": _planted_in_run("viewer.html"),
    "compare: compare.html in --out a link": _compare_inner,
    "init --force: audit.yaml a link": _init_force("audit.yaml"),
    "init --force: README.md a link": _init_force("README.md"),
    "annotate: sheet.csv.sample.json a link": _sidecar("sheet.csv.sample.json", False),
    "annotate --force: sheet.csv.sample.json a link": _sidecar("sheet.csv.sample.json", True),
    "annotate --force: sheet.sample.json a link": _sidecar("sheet.sample.json", True),
    "annotate --force: sheet.csv a link": _annotate_force_link,
    "pack --force: audit.zip a link": _pack_force_link,
    "run: runtime.cache a link to an unrelated file": _cache_link,
    "run: runtime.reports_dir a link to a file": _reports_link_to_file,
}
INSIDE_XFAIL = {
    "view RUN: viewer.html a link": WRITER,
    "annotate --force: sheet.csv a link": WRITER,
    # round 4 variants of the same class: the sampling record beside the sheet, and the pack
    "annotate --force: sheet.csv.sample.json a link": WRITER,
    "pack --force: audit.zip a link": WRITER,
}


@pytest.mark.parametrize("case", list(INSIDE))
def test_a_link_planted_where_a_command_writes_is_never_written_through(source: Source, short_dir: Path,  # type: ignore[no-untyped-def]
                                                                        cli, case: str) -> None:
    args, victim = INSIDE[case](source, short_dir)
    code, out, err = cli(*args)
    _check(code, out, err, Target("", guarded=victim), short_dir)


def test_runtime_cache_through_a_dangling_link_does_not_create_its_target(source: Source, short_dir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """New in round 4 (LOW): `runtime.cache=<dangling link>` makes a new SQLite file
    wherever the link points (an unrelated folder, another user's path). The safe outcome:
    refused in one line, or the cache made at the link itself; never a file created at the
    link's target. Fails on main: the target is created and the run finishes."""
    (short_dir / "c.sqlite").symlink_to(short_dir / "made-through-link.sqlite")
    (short_dir / "reports").mkdir()
    code, out, err = cli("run", "--fail-on", "never", f"spec={source.spec}", "model=scripted",
                         f"runtime.cache={short_dir / 'c.sqlite'}", f"runtime.reports_dir={short_dir / 'reports'}",
                         "runtime.progress=false")
    _check(code, out, err, Target("", absent=short_dir / "made-through-link.sqlite"), short_dir)
