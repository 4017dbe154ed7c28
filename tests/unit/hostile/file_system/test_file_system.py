"""Hostile file systems: paths that are directories, devices, FIFOs or symlink loops;
caches, manifests and run folders that are damaged, truncated, foreign or random bytes;
read-only and full disks. Each ends in one line with a hint and exit code 2, with nothing
half-written and no input file changed.

Gathered from issues 11 (spec safety) and 15 (hardening II and its catalogue)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec, write_crows_subset, write_spec
from tests.unit.hostile._cases import (  # noqa: F401  (the *_fixture names register fixtures)
    BASE,
    Case,
    assert_no_leak,
    assert_one_line_nothing_changed,
    case_spec,
    error_lines,
    planted_fixture,
    run_case,
    spec_with,
    symlink_loop,
    write_file,
)

# -- no traceback: bad paths, damaged caches (issue 15, class 13) -----------------------------

def _real_cache(w: Path) -> Path:
    from biasaudit.store import Store

    Store(w / "real.sqlite").close()
    return w / "real.sqlite"


def _truncated_db(w: Path) -> Path:
    data = _real_cache(w).read_bytes()
    return write_file(w, "t.sqlite", data[:1000])


def _foreign_db(w: Path) -> Path:
    with sqlite3.connect(w / "places.sqlite") as db:
        db.execute("CREATE TABLE places (url TEXT)")
    return w / "places.sqlite"


BAD_PATHS = {
    "symlink loop as spec": (lambda w: [f"spec={symlink_loop(w)}"], ["loop.yaml", "symlink loop"]),
    "symlink loop as data": (lambda w: [f"stimuli.source={symlink_loop(w)}"], ["loop.yaml", "stimuli.source"]),
    "cache is a directory": (lambda w: [f"runtime.cache={w}"], ["runtime.cache", "a directory"]),
    "cache is a device": (lambda w: ["runtime.cache=/dev/null"], ["/dev/null", "not a regular file"]),
    "cache is random bytes": (lambda w: [f"runtime.cache={write_file(w, 'c.sqlite', os.urandom(4096))}"],
                              ["c.sqlite", "not a biasaudit cache"]),
    "cache is a truncated database": (lambda w: [f"runtime.cache={_truncated_db(w)}"], ["not a biasaudit cache"]),
    "cache is another program's database": (lambda w: [f"runtime.cache={_foreign_db(w)}"],
                                            ["other tables: places"]),
    "reports folder is a file": (lambda w: [f"runtime.reports_dir={write_file(w, 'r.txt', 'x')}"],
                                 ["runtime.reports_dir", "is not a folder"]),
    "data source is /dev/zero": (lambda w: ["stimuli.source=/dev/zero"], ["/dev/zero", "not a regular file"]),
    "data source is a directory": (lambda w: [f"stimuli.source={w}"], ["a directory, not a file"]),
    "spec is a directory": (lambda w: [f"spec={w / 'sub.yaml'}"], ["a directory"]),
}


@pytest.mark.parametrize("case", list(BAD_PATHS))
def test_bad_paths_and_values_end_in_one_line(workdir: Path, cli, planted: str, case: str) -> None:  # type: ignore[no-untyped-def]
    make, must = BAD_PATHS[case]
    assert_one_line_nothing_changed(workdir, cli, make, must)


def _finished_run(workdir: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    spec = spec_with(workdir)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code == 0, err
    return run_dirs(workdir)[0]


def test_report_on_a_damaged_run_is_one_line_and_creates_nothing(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    run = _finished_run(workdir, cli)
    manifest = run / "manifest.json"
    good = manifest.read_text()
    for damage, must in ((good[: len(good) // 2], "not valid JSON"), ("[1, 2]", "lacks a usable 'spec_file'"),
                         (good.replace(str(workdir / "cache.sqlite"), str(workdir / "gone" / "c.sqlite")),
                          "cache file not found")):
        manifest.write_text(damage)
        before = sorted(workdir.rglob("*"))
        code, out, err = cli("report", str(run))
        assert code == 2 and len(error_lines(err)) == 1 and must in err, err
        assert sorted(workdir.rglob("*")) == before  # no folder, database or file was created
    manifest.write_text(good)
    assert cli("report", str(run))[0] == 0
    assert_no_leak(workdir)


def test_merge_cache_refuses_itself_garbage_and_twice(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    _finished_run(workdir, cli)
    cache = workdir / "cache.sqlite"
    garbage = write_file(workdir, "g.sqlite", os.urandom(2048))
    for args, must in (([str(cache), str(cache)], "merged into itself"),
                       ([str(workdir / "new.sqlite"), str(garbage)], "not a biasaudit cache"),
                       ([str(workdir / "new.sqlite"), str(cache), str(cache)], "given twice"),
                       ([str(workdir / "new.sqlite"), str(workdir)], "a directory")):
        code, out, err = cli("merge-cache", *args)
        assert code == 2 and len(error_lines(err)) == 1 and must in err, err
        assert not (workdir / "new.sqlite").exists()
    code, out, _ = cli("merge-cache", str(workdir / "new.sqlite"), str(cache))
    assert code == 0 and "6 new responses" in out
    assert_no_leak(workdir, out)


def test_read_only_reports_folder_leaves_nothing_half_written(workdir: Path, cli, planted: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    if os.geteuid() == 0:  # root may write anywhere (CI runs as root): the folder answers as read-only would
        import biasaudit._util.fileio as fileio  # the output-path checks (preflight uses them)

        real = os.access
        ro = (workdir / "reports").resolve()
        monkeypatch.setattr(fileio.os, "access",
                            lambda path, mode: False if Path(path).resolve() == ro else real(path, mode))
    (workdir / "reports").chmod(0o500)
    try:
        spec = spec_with(workdir)
        code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    finally:
        (workdir / "reports").chmod(0o700)
    assert code == 2 and "runtime.reports_dir" in err and "not writable" in err
    assert not list(workdir.rglob("*.tmp"))


def test_full_disk_while_writing_reports_is_one_line(workdir: Path, cli, planted: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import errno

    import biasaudit._util.fileio as fileio

    real_replace = os.replace

    def full(src, dst):  # type: ignore[no-untyped-def]
        if str(dst).endswith("report.html"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(fileio.os, "replace", full)
    spec = spec_with(workdir)
    code, out, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code == 2 and len(error_lines(err)) == 1 and "the disk is full" in err and "report.html" in err
    assert not list(workdir.rglob("*.tmp"))
    [run] = [p for p in (workdir / "reports").rglob("manifest.json")]
    assert not (run.parent / "summary.json").exists()  # the folder does not claim to be complete
    assert_no_leak(workdir, out, err)


# -- data paths are relative to the spec file, not the working directory (issue 11) -------------

def test_data_path_is_relative_to_the_spec_not_the_working_directory(workdir: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    specs = workdir / "audits"
    (specs / "data").mkdir(parents=True)
    data = write_crows_subset(specs / "data" / "pairs.csv", 3)
    spec = write_spec(specs / "rel.yaml", BASE.replace("source: pairs.csv", "source: data/pairs.csv"))
    elsewhere = workdir / "elsewhere"
    (elsewhere / "data").mkdir(parents=True)
    write_crows_subset(elsewhere / "data" / "pairs.csv", 5)  # a decoy the working directory would find
    monkeypatch.chdir(elsewhere)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code == 0, err
    [run] = run_dirs(workdir)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["data"]["source"] == str(data.resolve()) and manifest["data"]["rows"] == 3
    md = (run / "report.md").read_text()
    assert f"| Data | `{data.resolve()}` (SHA-256 " in md and "- Data rows: 3 used of 3" in md


# -- the catalogue: paths, caches and run folders (issue 15) ---------------------------------------

def _cache(kind: str) -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        p = w / "c.sqlite"
        with sqlite3.connect(p) as db:
            if kind == "wrong columns":
                db.execute("CREATE TABLE responses (key TEXT)")
            elif kind == "empty file":
                pass
        if kind == "empty file":
            p.write_bytes(b"")
        return [case_spec(w), f"runtime.cache={p}", f"runtime.reports_dir={w / 'reports'}", "model=scripted"]
    return build


def _bad_row(w: Path) -> list[str]:
    """A finished run's cache with one stored output made unreadable."""
    from biasaudit.cli.app import main

    spec = case_spec(w)
    args = [spec, "model=scripted", f"runtime.cache={w / 'c.sqlite'}", f"runtime.reports_dir={w / 'r'}",
            "runtime.progress=false"]
    assert main(["run", *args]) == 0
    with sqlite3.connect(w / "c.sqlite") as db:
        db.execute("UPDATE responses SET output = '{not json' WHERE rowid = 1")
    shutil.rmtree(w / "r")
    return [*args[:3], f"runtime.reports_dir={w / 'reports'}"]


def _run_folder(summary: str | None, manifest: str | None = None) -> Callable[[Path], list[str]]:
    def build(w: Path) -> list[str]:
        d = w / "runs" / "r1"
        d.mkdir(parents=True)
        if summary is not None:
            (d / "summary.json").write_text(summary)
        if manifest is not None:
            (d / "manifest.json").write_text(manifest)
        return [str(d)]
    return build


CASES: dict[str, Case] = {
    # -- PATH ----------------------------------------------------------------------------------
    "spec path with spaces and unicode": Case("PATH", lambda w: [
        "spec=" + str(write_spec(w / "mon audit é.yaml", BASE.replace("pairs.csv", str(tp_spec(w, 3).parent / "pairs.csv"))))]),
    "data path too long": Case("PATH", lambda w: [case_spec(w), "stimuli.source=" + "a/" * 3000 + "x.csv"],
                               ["stimuli.source"]),
    "cache parent is a file": Case("PATH", lambda w: [case_spec(w),
                                                      f"runtime.cache={case_spec(w).removeprefix('spec=')}/c.sqlite",
                                                      "model=scripted"], ["runtime.cache", "not a folder"], command="run"),
    "reports under a file": Case("PATH", lambda w: [case_spec(w), "model=scripted", f"runtime.cache={w / 'c.sqlite'}",
                                                    f"runtime.reports_dir={case_spec(w).removeprefix('spec=')}/r"],
                                 ["runtime.reports_dir"], command="run"),
    # -- CACHE -----------------------------------------------------------------------------------
    "cache with wrong columns": Case("CACHE", _cache("wrong columns"), ["lacks status"], command="run"),
    "cache is an empty file": Case("CACHE", _cache("empty file"), [], command="run"),
    "cache with a damaged row": Case("CACHE", _bad_row, ["is damaged", "delete that row"], command="run"),
    # -- RUNS: folders given to compare and report ----------------------------------------------
    "compare a truncated summary": Case("RUNS", _run_folder('{"metrics": '), ["not readable JSON"], command="compare"),
    "compare a summary of the wrong shape": Case("RUNS", _run_folder('{"metrics": {"x": 1}}'),
                                                 ["not as biasaudit writes it"], command="compare"),
    "compare a summary whose headline is missing": Case("RUNS", _run_folder(json.dumps(
        {"audit": {"name": "a"}, "model": {"name": "m"}, "metrics": {"x": {"name": "x", "headline": "h",
                                                                            "estimates": {}}}})),
        ["lacks its headline"], command="compare"),
    "report on a folder without a manifest": Case("RUNS", _run_folder(None), ["no manifest.json"], command="report"),
    "report on a manifest nested 100k deep": Case("RUNS", _run_folder(None, "[" * 100_000 + "]" * 100_000),
                                                  ["not valid JSON"], command="report"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch, name: str) -> None:  # type: ignore[no-untyped-def]
    run_case(CASES[name], workdir, cli, monkeypatch)
