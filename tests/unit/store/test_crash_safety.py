"""Crash safety (issue 11): two processes on one cache do not corrupt it; a run row whose
process is gone is marked interrupted; a cache from before run owners is upgraded.

The kill-and-resume and Ctrl-C tests are in tests/unit/hostile/signals/test_signals.py."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from biasaudit.store import Store
from tests.conftest import run_dirs
from tests.helpers import comparable_summary, verdict_code
from tests.unit.hostile._cases import ENV, reference_fixture, run_args  # noqa: F401  (registers the fixture `reference`)


def test_stale_run_rows_are_marked_only_when_their_process_is_gone(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.sqlite")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    store.start_run("live", "a", str(tmp_path / "live"), {})  # this process: alive
    store.start_run("gone", "a", str(tmp_path / "gone"), {})
    store.db.execute("UPDATE runs SET pid = ? WHERE run_id = 'gone'", (int(dead.stdout),))
    store.start_run("elsewhere", "a", str(tmp_path / "x"), {})
    store.db.execute("UPDATE runs SET pid = ?, host = 'another-host' WHERE run_id = 'elsewhere'", (int(dead.stdout),))
    assert [r["run_id"] for r in store.mark_stale_runs()] == ["gone"]
    assert {r["run_id"]: r["status"] for r in store.runs()} == {"live": "running", "gone": "interrupted",
                                                              "elsewhere": "running"}
    assert store.mark_stale_runs() == []  # once only


def test_cache_written_before_runs_had_owners_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE runs (run_id TEXT PRIMARY KEY, audit TEXT NOT NULL, run_dir TEXT NOT NULL, "
                         "started REAL NOT NULL, finished REAL, status TEXT NOT NULL, manifest TEXT NOT NULL, counts TEXT);"
                         "INSERT INTO runs VALUES ('old', 'a', '/x', 0, NULL, 'running', '{}', NULL);")
    store = Store(path)
    assert store.mark_stale_runs() == []  # no owner recorded: left alone
    store.start_run("new", "a", "/y", {})
    assert store.run_status("new") == "running"


@pytest.mark.slow  # two `biasaudit run` processes and a reference run in subprocesses
def test_two_processes_on_one_cache(workdir: Path, reference) -> None:  # type: ignore[no-untyped-def]
    log = workdir / "calls.log"
    args = run_args(workdir, log, "+model.script.delay=0.01")
    procs = [subprocess.Popen([sys.executable, "-m", "biasaudit.cli.app", *args], cwd=workdir, env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == verdict_code(run_dirs(workdir)[-1]), err
    with sqlite3.connect(workdir / "cache.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        keys = [r[0] for r in db.execute("SELECT key FROM responses")]
        assert [r[0] for r in db.execute("SELECT status FROM runs")] == ["finished", "finished"]
    assert sorted(keys) == reference[1]  # one row per request
    # without coordination both may answer the same request; the results still agree
    for d in run_dirs(workdir):
        assert comparable_summary(d / "summary.json", resumed=True) == reference[0]
    assert json.loads((run_dirs(workdir)[0] / "summary.json").read_text())["overall"] == "INCONCLUSIVE"
