"""Hostile output paths (issue 26, class 2: "`--junit PATH` replaces what is there").
Every output path a user names (`--junit`, `runtime.reports_dir`, `runtime.cache`,
`compare --out`, the `merge-cache` target) follows one rule (`fileio.check_output_file`,
`check_output_dir`), checked before anything runs and again when written: a symlink at a
file's place is refused, never written through (issue 39; a folder path's links are
followed: the folder is the user's); an existing file biasaudit did not write is left
alone; /dev/null, a terminal and
the process's own /dev/stdout and /dev/stderr are written as streams; a directory, FIFO,
socket, other device, anything under /proc or /sys, a read-only file or folder is a
one-line error (exit 2) before any model call. Before the fix, the JUnit file was written
by temp file + rename after the run, which replaced a symlink, a FIFO or, run as root, a
device node (`--junit /dev/null` swapped the machine's /dev/null for a file), and
`--junit <dir>` failed after every model call.

Also: a run stopped by a user error still writes its JUnit file (one errored test case
whose message is the error line), and `compare` follows symlinked run folders inside the
folder it is given, and says why it skips one that leads elsewhere.

The device cases check the path's classification (`check_output_file`) before running
the command, so a regression fails the test instead of replacing a real device node."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec
from tests.unit.hostile._cases import KEY_ENV, SECRET, assert_no_leak, error_lines


@pytest.fixture(autouse=True)
def _planted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="h26", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _run_args(w: Path, *overrides: str) -> list[str]:
    """A scripted run that logs every model call to w/calls.log; `overrides` replace the
    isolation's cache and reports folder."""
    spec = tp_spec(w, 3)
    given = {o.split("=", 1)[0] for o in overrides}
    keep = [o for o in isolation(w) if o.split("=", 1)[0] not in given]
    return [f"spec={spec}", "model=scripted", f"+model.script.calls_log={w / 'calls.log'}", *keep, *overrides]


def _nothing_ran(w: Path) -> None:
    assert not (w / "calls.log").exists(), "a model was called"
    assert not any((w / "reports").iterdir()), "a run folder was written"
    assert not (w / "cache.sqlite").exists(), "the cache was made"


def _one_line(code: int, err: str, *must: str) -> str:
    assert "Traceback" not in err, err
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "hint:" in lines[0], err
    for m in must:
        assert m in lines[0], (m, lines[0])
    return lines[0]


def _guard_stream(path: str) -> None:
    """Never let a regression replace a real device: the path must classify as a stream."""
    from biasaudit._util.fileio import check_output_file

    out = check_output_file(path, key="--junit", what="JUnit file")
    assert out.stream is not None or out.device, out


def _guard_refused(path: str) -> None:
    from biasaudit._util.fileio import check_output_file
    from biasaudit.errors import BiasAuditError

    with pytest.raises(BiasAuditError):
        check_output_file(path, key="--junit", what="JUnit file")


# -- --junit: refused before the run --------------------------------------------------------------

def _fifo(w: Path, d: Path) -> Path:
    os.mkfifo(w / "j.xml")
    return w / "j.xml"


def _sock(w: Path, d: Path) -> Path:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "j.xml"))
    s.close()
    return d / "j.xml"


def _link(target: str) -> Callable[[Path, Path], Path]:
    def build(w: Path, d: Path) -> Path:
        (w / "j.xml").symlink_to(target)
        return w / "j.xml"
    return build


def _loop(w: Path, d: Path) -> Path:
    (w / "a.xml").symlink_to(w / "b.xml")
    (w / "b.xml").symlink_to(w / "a.xml")
    return w / "a.xml"


def _under_file(w: Path, d: Path) -> Path:
    (w / "plain").write_text("x")
    return w / "plain" / "j.xml"


def _dir(w: Path, d: Path) -> Path:
    (w / "out").mkdir()
    return w / "out"


JUNIT_REFUSED: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "a directory": (_dir, "is a directory"),
    "a FIFO": (_fifo, "a FIFO"),
    "a socket": (_sock, "a socket"),
    "/dev/zero": (lambda w, d: Path("/dev/zero"), "a device"),
    "/dev/full": (lambda w, d: Path("/dev/full"), "a device"),
    "/proc/self/environ": (lambda w, d: Path("/proc/self/environ"), "kernel pseudo file system"),
    "a new file under /proc": (lambda w, d: Path("/proc/self/junit.xml"), "kernel pseudo file system"),
    "a symlink to /proc/self/environ": (_link("/proc/self/environ"), "symbolic link"),
    "a symlink to /dev/zero": (_link("/dev/zero"), "symbolic link"),
    "a symlink loop": (_loop, "symbolic link"),
    "a file biasaudit did not write": (lambda w, d: (w / "j.xml").write_text("<mine/>") and w / "j.xml",
                                       "not a file biasaudit wrote"),
    "a folder that is a file": (_under_file, "is not a folder"),
}


@pytest.mark.parametrize("case", list(JUNIT_REFUSED))
def test_a_bad_junit_path_is_refused_before_the_run(workdir: Path, cli, short_dir: Path, case: str) -> None:  # type: ignore[no-untyped-def]
    build, why = JUNIT_REFUSED[case]
    path = build(workdir, short_dir)
    if str(path).startswith("/dev/"):
        _guard_refused(str(path))
    before = os.lstat(path).st_mode if os.path.lexists(path) else None
    code, out, err = cli("run", *_run_args(workdir), "--junit", str(path))
    _one_line(code, err, "--junit", why)
    _nothing_ran(workdir)
    assert (os.lstat(path).st_mode if os.path.lexists(path) else None) == before  # left as it was
    assert_no_leak(workdir, out, err)


def test_a_read_only_folder_or_file_is_refused_before_the_run(workdir: Path, cli,  # type: ignore[no-untyped-def]
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import biasaudit._util.fileio as fileio

    locked = {(workdir / "ro").resolve(), (workdir / "ro.xml").resolve()}
    (workdir / "ro").mkdir()
    (workdir / "ro.xml").write_text("<old/>")
    real = fileio._writable
    monkeypatch.setattr(fileio, "_writable", lambda p: Path(p).resolve() not in locked and real(p))  # root ignores modes
    for path, why in ((workdir / "ro" / "j.xml", "is not writable"), (workdir / "ro.xml", "read-only")):
        code, _, err = cli("run", *_run_args(workdir), "--junit", str(path))
        _one_line(code, err, "--junit", why)
        _nothing_ran(workdir)
    assert (workdir / "ro.xml").read_text() == "<old/>"


# -- --junit: written through, or as a stream ------------------------------------------------------

def _junit_root(text: str | bytes) -> etree._Element:
    return etree.fromstring(text.encode() if isinstance(text, str) else text)


def test_junit_to_dev_null_is_a_stream_and_leaves_the_device(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    _guard_stream("/dev/null")
    code, _, err = cli("run", *_run_args(workdir), "--junit", "/dev/null")
    assert code in (0, 1, 3), err  # a verdict, not an error
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    assert not Path("/dev/null.tmp").exists()


@pytest.mark.parametrize("path", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_junit_to_stdout_goes_to_the_output_stream(workdir: Path, cli, path: str) -> None:  # type: ignore[no-untyped-def]
    _guard_stream(path)
    before = os.lstat(path).st_mode
    code, out, err = cli("run", *_run_args(workdir), "--junit", path)
    assert code in (0, 1, 3), err  # a verdict, not an error
    xml = out[out.index("<?xml"):out.index("</testsuites>") + len("</testsuites>")]
    assert _junit_root(xml).get("tests") == "1"
    assert os.lstat(path).st_mode == before  # still the link it was


def test_junit_to_stderr_goes_to_the_error_stream(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    _guard_stream("/dev/stderr")
    code, _, err = cli("run", *_run_args(workdir), "--junit", "/dev/stderr")
    assert code in (0, 1, 3) and "<testsuites" in err, err


def test_junit_at_a_symlink_is_refused_and_its_target_kept(workdir: Path, cli, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """Issue 39: never written through a link (it was, before: the target got the XML)."""
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "ci" / "results.xml"
    elsewhere.parent.mkdir()
    elsewhere.write_text("old")
    (workdir / "j.xml").symlink_to(elsewhere)
    code, _, err = cli("run", *_run_args(workdir), "--junit", str(workdir / "j.xml"))
    _one_line(code, err, "--junit", "symbolic link", "never writes through a link")
    assert (workdir / "j.xml").is_symlink() and os.readlink(workdir / "j.xml") == str(elsewhere)
    assert elsewhere.read_text() == "old"


def test_junit_at_a_dangling_symlink_is_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    (workdir / "j.xml").symlink_to(workdir / "made.xml")
    code, _, err = cli("run", *_run_args(workdir), "--junit", str(workdir / "j.xml"))
    _one_line(code, err, "--junit", "symbolic link")
    assert (workdir / "j.xml").is_symlink() and not (workdir / "made.xml").exists()


def test_junit_of_an_earlier_run_is_replaced(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The file a run wrote carries biasaudit's marker: the next run refreshes it."""
    for _ in range(2):
        code, _, err = cli("run", *_run_args(workdir), "--junit", str(workdir / "j.xml"))
        assert code in (0, 1, 3), err
    assert _junit_root((workdir / "j.xml").read_bytes()).get("tests") == "1"


def test_junit_in_missing_folders_makes_them(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = workdir / "test-results" / "deep" / "j.xml"
    code, _, err = cli("run", *_run_args(workdir), "--junit", str(path))
    assert code in (0, 1, 3), err  # a verdict, not an error
    assert _junit_root(path.read_bytes()).get("tests") == "1"


def test_a_planted_temporary_file_link_is_not_written_through(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`j.xml.tmp` -> a victim file: the temporary file is made new, never opened through it."""
    victim = workdir / "victim.txt"
    victim.write_text("keep me")
    (workdir / "j.xml.tmp").symlink_to(victim)
    code, _, err = cli("run", *_run_args(workdir), "--junit", str(workdir / "j.xml"))
    assert code in (0, 1, 3), err  # a verdict, not an error
    assert victim.read_text() == "keep me"
    assert _junit_root((workdir / "j.xml").read_bytes()).get("tests") == "1"
    assert os.readlink(workdir / "j.xml.tmp") == str(victim)  # not ours: left as it was


# -- --junit on a user error ------------------------------------------------------------------------

@pytest.mark.parametrize("bad, must", [
    ("stimuli.source=/proc/self/environ", "kernel pseudo file system"),
    ("stimuli.format=nope", "stimuli.format"),
    ("audit.name=[", "overrides"),
])
def test_a_user_error_still_writes_junit_with_one_errored_case(workdir: Path, cli, bad: str, must: str) -> None:  # type: ignore[no-untyped-def]
    path = workdir / "j.xml"
    code, _, err = cli("run", *_run_args(workdir), bad, "--junit", str(path))
    line = _one_line(code, err, must)
    root = _junit_root(path.read_bytes())
    assert (root.get("tests"), root.get("errors"), root.get("failures")) == ("1", "1", "0")
    [error] = root.findall("testsuite/testcase/error")
    assert error.get("message") == line and error.get("type") == "user_error"
    _nothing_ran(workdir)


# -- reports folder, cache, compare --out, merge-cache target ----------------------------------------

def _file(w: Path) -> Path:
    (w / "plain.txt").write_text("x")
    return w / "plain.txt"


def _fifo_at(w: Path) -> Path:
    os.mkfifo(w / "pipe")
    return w / "pipe"


def _loop_at(w: Path) -> Path:
    (w / "l1").symlink_to(w / "l2")
    (w / "l2").symlink_to(w / "l1")
    return w / "l1"


def _sock_at(w: Path) -> Path:
    d = Path(tempfile.mkdtemp(prefix="h26", dir="/tmp"))
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / "c"))
    s.close()
    return d / "c"


OUTPUTS: dict[str, tuple[str, Callable[[Path], Path], str]] = {
    # name: (override key, path builder, text of the error)
    "reports folder is a file": ("runtime.reports_dir", _file, "is not a folder"),
    "reports folder is /dev/null": ("runtime.reports_dir", lambda w: Path("/dev/null"), "kernel pseudo file system"),
    "reports folder under /proc": ("runtime.reports_dir", lambda w: Path("/proc/self/reports"),
                                   "kernel pseudo file system"),
    "reports folder is a symlink loop": ("runtime.reports_dir", _loop_at, "loop"),
    "reports folder is a FIFO": ("runtime.reports_dir", _fifo_at, "is not a folder"),
    "cache is a FIFO": ("runtime.cache", _fifo_at, "a FIFO"),
    "cache is a socket": ("runtime.cache", _sock_at, "a socket"),
    "cache is a directory": ("runtime.cache", lambda w: w, "a directory"),
    "cache under /proc": ("runtime.cache", lambda w: Path("/proc/self/c.sqlite"), "kernel pseudo file system"),
    "cache is a symlink to /dev/zero": ("runtime.cache", lambda w: (w / "c").symlink_to("/dev/zero") or w / "c",
                                       "a device"),
    "cache is a symlink loop": ("runtime.cache", _loop_at, "loop"),
}


@pytest.mark.parametrize("case", list(OUTPUTS))
def test_reports_folder_and_cache_are_checked_before_the_run(workdir: Path, cli, case: str) -> None:  # type: ignore[no-untyped-def]
    key, build, why = OUTPUTS[case]
    path = build(workdir)
    before = os.lstat(path).st_mode if os.path.lexists(path) else None
    code, out, err = cli("run", *_run_args(workdir, f"{key}={path}"))
    _one_line(code, err, key, why)
    assert not (workdir / "calls.log").exists()
    assert (os.lstat(path).st_mode if os.path.lexists(path) else None) == before
    assert_no_leak(workdir, out, err)


def test_reports_folder_and_an_existing_cache_through_symlinks_are_used_in_their_targets(  # type: ignore[no-untyped-def]
        workdir: Path, cli, tmp_path_factory) -> None:
    real = tmp_path_factory.mktemp("real")
    (real / "reports").mkdir()
    (workdir / "rlink").symlink_to(real / "reports")
    (workdir / "clink").symlink_to(real / "c.sqlite")
    # a dangling link is refused (issue 39 round 4): SQLite would make a new file wherever it points
    code, _, err = cli("run", *_run_args(workdir, f"runtime.reports_dir={workdir / 'rlink'}",
                                         f"runtime.cache={workdir / 'clink'}"))
    assert code == 2 and "does not exist" in err and not (real / "c.sqlite").exists(), err
    # a link to an existing cache (a shared disk) is followed: the cache is used at its target
    (real / "c.sqlite").touch()  # an empty file is an empty SQLite database
    code, _, err = cli("run", *_run_args(workdir, f"runtime.reports_dir={workdir / 'rlink'}",
                                         f"runtime.cache={workdir / 'clink'}"))
    assert code in (0, 1, 3), err  # a verdict, not an error
    assert list((real / "reports").rglob("summary.json")) and (real / "c.sqlite").stat().st_size > 0
    assert (workdir / "clink").is_symlink() and (workdir / "rlink").is_symlink()


@pytest.fixture
def finished(workdir: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    code, _, err = cli("run", *_run_args(workdir))
    assert code in (0, 1, 3), err  # a verdict, not an error
    return run_dirs(workdir)[0]


@pytest.mark.parametrize("case", ["a file", "/dev/null", "under /proc", "a symlink loop"])
def test_compare_out_is_checked_before_comparing(workdir: Path, cli, finished: Path, case: str) -> None:  # type: ignore[no-untyped-def]
    out_path = {"a file": lambda: _file(workdir), "/dev/null": lambda: Path("/dev/null"),
                "under /proc": lambda: Path("/proc/self/cmp"), "a symlink loop": lambda: _loop_at(workdir)}[case]()
    code, _, err = cli("compare", str(workdir / "reports"), "--out", str(out_path))
    _one_line(code, err, "--out")
    assert not list(workdir.rglob("compare.json"))


@pytest.mark.parametrize("case", ["a FIFO", "a directory", "/dev/null", "under /proc"])
def test_merge_cache_target_is_checked_before_merging(workdir: Path, cli, finished: Path, case: str) -> None:  # type: ignore[no-untyped-def]
    target = {"a FIFO": lambda: _fifo_at(workdir), "a directory": lambda: workdir / "reports",
              "/dev/null": lambda: Path("/dev/null"), "under /proc": lambda: Path("/proc/self/m.sqlite")}[case]()
    before = os.lstat(target).st_mode if os.path.lexists(target) else None
    code, _, err = cli("merge-cache", str(target), str(workdir / "cache.sqlite"))
    _one_line(code, err, "runtime.cache")
    assert (os.lstat(target).st_mode if os.path.lexists(target) else None) == before


# -- compare: symlinked run folders --------------------------------------------------------------------

def test_compare_follows_symlinked_folders_inside_the_root(workdir: Path, cli, finished: Path) -> None:  # type: ignore[no-untyped-def]
    root = workdir / "sweep"
    (root / "real").mkdir(parents=True)
    shutil.copytree(finished, root / "real" / "r1")
    shutil.copytree(finished, root / "real" / "r2")
    (root / "latest").symlink_to(root / "real" / "r1")  # the same run again: counted once, and said
    (root / "loop").symlink_to(root)  # a cycle: followed once
    code, out, err = cli("compare", str(root), "--out", str(workdir / "cmp"))
    assert code in (0, 1, 3), err  # a verdict, not an error
    assert "compared 2 runs" in out, out
    assert f"note: skipped {root / 'latest'}: a symlink to {root / 'real' / 'r1'}, which is compared" in err, err
    assert f"note: skipped {root / 'loop'}: a symlink to {root}" in err, err


def test_compare_follows_links_to_run_folders_and_says_why_it_skips_others(  # type: ignore[no-untyped-def]
        workdir: Path, cli, finished: Path, tmp_path_factory) -> None:
    root = workdir / "picked"
    root.mkdir()
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    shutil.copytree(finished, elsewhere / "run-a")
    shutil.copytree(finished, elsewhere / "tree" / "deep" / "run-b")
    (root / "a").symlink_to(elsewhere / "run-a")  # a run folder kept elsewhere: compared
    (root / "tree").symlink_to(elsewhere / "tree")  # a folder outside the root: not walked, and said
    (root / "broken").symlink_to(elsewhere / "gone")
    code, out, err = cli("compare", str(root), "--out", str(workdir / "cmp"))
    assert code in (0, 1, 3), err  # a verdict, not an error
    assert "compared 1 runs" in out, out
    assert f"note: skipped {root / 'tree'}: a symlink to {elsewhere / 'tree'}, outside {root}" in err, err
    assert f"note: skipped {root / 'broken'}: a broken symlink" in err, err


def test_devices_are_classified_from_their_numbers_never_opened() -> None:
    """A terminal is told from its device number (opening some devices acts: a watchdog
    starts counting), so only /dev/null, terminals and the standard streams are streams."""
    from biasaudit._util.fileio import check_output_file
    from biasaudit.errors import BiasAuditError

    assert check_output_file("/dev/stdout", key="k").stream == 1
    assert check_output_file("/dev/stderr", key="k").stream == 2
    assert check_output_file("/dev/null", key="k").device
    if os.path.exists("/dev/tty"):
        assert check_output_file("/dev/tty", key="k").device
    for refused in ("/dev/ptmx", "/dev/zero", "/dev/random", "/dev/full"):
        if os.path.exists(refused):
            with pytest.raises(BiasAuditError, match="a device"):
                check_output_file(refused, key="k")
    with pytest.raises(BiasAuditError, match="a device"):
        check_output_file("/dev/null", key="runtime.cache", streams=False)
