"""Issue 39 red team (round 4): a shared cache written by concurrent processes, and kills
at several points of a small run and of `merge-cache`.

The safe outcome: concurrent runs on one cache both finish with the same result and leave
a cache SQLite calls intact; concurrent merges into one target both finish (or one says in
one line why not) and the target holds every row; a process killed at any point leaves a
cache and folder from which the same command finishes with the uninterrupted result."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import comparable_summary, tp_spec
from tests.unit.hostile._cases import ENV, error_lines


def _proc(args: list[str], cwd: Path, kill_at: tuple[str, int] | None = None) -> subprocess.Popen[str]:
    head = ["-m", "tests.killpoints", kill_at[0], str(kill_at[1])] if kill_at else ["-m", "biasaudit.cli.app"]
    return subprocess.Popen([sys.executable, *head, *args], cwd=cwd, env={**ENV, "BIASAUDIT_CHROMIUM": "/nonexistent"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _done(p: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=300)
    return p.returncode, out, err


def _run_args(w: Path, n: int = 6) -> list[str]:
    return ["run", "--fail-on", "never", f"spec={tp_spec(w, n)}", "model=scripted", *isolation(w)]


def _intact(cache: Path) -> int:
    with sqlite3.connect(cache) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return int(db.execute("SELECT count(*) FROM responses").fetchone()[0])


def _summary(run: Path, w: Path) -> str:
    """summary.json with volatile values and the test's folder masked."""
    return comparable_summary(run / "summary.json", resumed=True).replace(str(w), "<w>")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    w = tmp_path_factory.mktemp("rt4-ref")
    (w / "reports").mkdir()
    code, _, err = _done(_proc(_run_args(w), w))
    assert code == 0, err
    return _summary(run_dirs(w)[0], w)


def test_two_runs_at_once_on_one_cache_agree_and_leave_it_intact(workdir: Path, reference: str) -> None:
    a, b = _proc(_run_args(workdir), workdir), _proc(_run_args(workdir), workdir)
    for code, _, err in (_done(a), _done(b)):
        assert code == 0 and "Traceback" not in err, err
    runs = run_dirs(workdir)
    assert len(runs) == 2
    assert {_summary(r, workdir) for r in runs} == {reference}
    assert _intact(workdir / "cache.sqlite") == 12  # 6 pairs x 2 sentences, each stored once


def test_four_runs_at_once_with_different_specs_on_one_cache(workdir: Path) -> None:
    procs = []
    for i in range(4):
        d = workdir / f"s{i}"
        d.mkdir()
        procs.append(_proc(["run", "--fail-on", "never", f"spec={tp_spec(d, 2 + i)}", "model=scripted",
                            f"runtime.cache={workdir / 'cache.sqlite'}", f"runtime.reports_dir={workdir / 'reports'}",
                            "runtime.progress=false"], d))
    for p in procs:
        code, _, err = _done(p)
        assert code == 0 and "Traceback" not in err, err
    assert _intact(workdir / "cache.sqlite") == 2 * 5  # the rows of the largest spec (5 pairs) cover the others


def _sources(w: Path) -> list[Path]:
    """Two job caches made by two small runs."""
    out = []
    for i, n in enumerate((3, 5)):
        d = w / f"job{i}"
        d.mkdir()
        (d / "reports").mkdir()
        code, _, err = _done(_proc(_run_args(d, n), d))
        assert code == 0, err
        out.append(d / "cache.sqlite")
    return out


def test_two_merges_at_once_into_one_target(workdir: Path) -> None:
    a, b = _sources(workdir)
    target = workdir / "all.sqlite"
    p1, p2 = _proc(["merge-cache", str(target), str(a)], workdir), _proc(["merge-cache", str(target), str(b)], workdir)
    results = [_done(p1), _done(p2)]
    for code, _, err in results:
        assert "Traceback" not in err, err
        if code != 0:
            lines = error_lines(err)
            assert code == 2 and len(lines) == 1 and "hint:" in lines[0], err
    for src, (code, _, _) in zip((a, b), results, strict=True):
        if code != 0:  # refused while the other merge held the target: the same merge again finishes
            assert _done(_proc(["merge-cache", str(target), str(src)], workdir))[0] == 0
    assert _intact(target) == 10  # the 5-pair job's rows hold the 3-pair job's


def test_a_merge_while_a_run_writes_its_source(workdir: Path) -> None:
    [a, _] = _sources(workdir)
    target = workdir / "all.sqlite"
    run = _proc(["run", "--fail-on", "never", f"spec={tp_spec(workdir, 8)}", "model=scripted",
                 f"runtime.cache={a}", f"runtime.reports_dir={workdir / 'reports'}", "runtime.progress=false"], workdir)
    merge = _proc(["merge-cache", str(target), str(a)], workdir)
    code, _, err = _done(merge)
    assert "Traceback" not in err and code in (0, 2), err
    assert _done(run)[0] == 0
    assert _done(_proc(["merge-cache", str(target), str(a)], workdir))[0] == 0  # again, after the run
    assert _intact(target) == _intact(a) == 16


@pytest.mark.parametrize("point", [("put", 1), ("put", 11), ("measure", 1), ("write", 3),
                                   ("finish_run", 1)], ids=lambda p: f"{p[0]}-{p[1]}")
def test_a_run_killed_at_a_point_resumes_to_the_same_result(workdir: Path, reference: str, point: tuple[str, int]) -> None:
    code, _, err = _done(_proc(_run_args(workdir), workdir, kill_at=point))
    assert code == -9, (code, err)  # SIGKILL: the run never finished
    _intact(workdir / "cache.sqlite")
    code, out, err = _done(_proc(_run_args(workdir), workdir))
    assert code == 0 and "Traceback" not in err, err
    finished = [d for d in run_dirs(workdir) if d.name in out]
    assert len(finished) == 1
    assert _summary(finished[0], workdir) == reference


def test_a_merge_killed_midway_finishes_when_run_again(workdir: Path) -> None:
    a, b = _sources(workdir)
    target = workdir / "all.sqlite"
    code, _, err = _done(_proc(["merge-cache", str(target), str(a), str(b)], workdir, kill_at=("put", 2)))
    assert code in (-9, 0), err  # killed, unless the merge copies rows without Store.put
    code, _, err = _done(_proc(["merge-cache", str(target), str(a), str(b)], workdir))
    assert code == 0 and "Traceback" not in err, err
    assert _intact(target) == 10
    assert not [p for p in os.listdir(workdir) if p.endswith((".tmp", "-journal"))]
