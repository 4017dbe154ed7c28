"""Signals: a run SIGKILLed at any point and run again ends with exactly the summary of an
uninterrupted run, and no model call is made twice; Ctrl-C (once or twice) stops cleanly
and says how to resume; a killed run's folder and store row say it did not finish.

Gathered from issues 11 (crash safety), 15 (Ctrl-C with openai_compat) and 16 (kill in
the coding stage)."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, isolation, run_dirs
from tests.helpers import GENERATE_SPEC, verdict_code, write_spec
from tests.support.fault_server import FaultServer
from tests.unit.hostile._cases import (  # noqa: F401  (the *_fixture names register fixtures)
    ENV,
    KEY_ENV,
    SECRET,
    SUBJECT_CALLS,
    TOTAL_CALLS,
    assert_no_leak,
    assert_resumes_exactly,
    biasaudit,
    logged_calls,
    planted_fixture,
    reference_fixture,
    run_args,
    statuses,
)

# Runs killed at a point or interrupted with Ctrl-C a moment after they start: alone, not
# beside another test's processes (under load the moment and the child processes' timing
# shift; `make test` runs `serial` tests after the two-worker phase).
pytestmark = pytest.mark.serial

# Kill points: after k model calls, k drawn from a seeded RNG over the whole run (subject
# calls first, then judge and parser calls made in the coding stage), and at named points
# of the coding, metric and report stages.
_rng = random.Random(20261122)
CALL_POINTS = sorted(_rng.sample(range(1, SUBJECT_CALLS), 2) + _rng.sample(range(SUBJECT_CALLS + 1, TOTAL_CALLS), 2))
STAGE_POINTS = [("code", 1), ("measure", 1), ("write", 4), ("finish_run", 1)]  # write 4: entering report.md


@pytest.mark.parametrize("k", CALL_POINTS)
def test_sigkill_after_k_calls_then_rerun_equals_uninterrupted_run(workdir: Path, reference, k: int) -> None:  # type: ignore[no-untyped-def]
    log = workdir / "calls.log"
    killed = biasaudit(run_args(workdir, log, f"+model.script.die_after={k}"), workdir)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len(logged_calls(log)) == k
    with sqlite3.connect(workdir / "cache.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == k  # each answered call committed
    [folder] = [p for p in (workdir / "reports" / "bx-crash").iterdir()]
    assert not (folder / "summary.json").exists() and (folder / "manifest.json").is_file()
    assert_resumes_exactly(workdir, log, reference)
    assert statuses(workdir) == ["interrupted", "finished"]
    note = (folder / "INTERRUPTED.txt").read_text()
    assert "did not finish" in note and "biasaudit run spec=" in note and "die_after" in note


@pytest.mark.parametrize("point", STAGE_POINTS, ids=[p for p, _ in STAGE_POINTS])
def test_sigkill_in_metric_and_report_stages_then_rerun(workdir: Path, reference, point: tuple[str, int]) -> None:  # type: ignore[no-untyped-def]
    log = workdir / "calls.log"
    killed = biasaudit(run_args(workdir, log), workdir, kill_at=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    n_before = len(logged_calls(log))
    [folder] = [p for p in (workdir / "reports" / "bx-crash").iterdir()]
    if point[0] == "code":
        assert n_before == SUBJECT_CALLS  # killed before any coding call
    else:
        assert n_before == TOTAL_CALLS  # the coding stage comes before the metrics
    if point[0] == "finish_run":
        # every file was written; only the store's bookkeeping was cut short
        assert (folder / "summary.json").is_file() and (folder / "report.html").is_file()
    else:
        assert not (folder / "summary.json").exists()  # never a summary without its report
    assert_resumes_exactly(workdir, log, reference)
    assert statuses(workdir) == ["interrupted", "finished"]
    assert (folder / "INTERRUPTED.txt").exists() == (point[0] != "finish_run")


def test_sigkill_in_the_middle_of_the_coding_stage_repeats_no_coding_call(workdir: Path, reference) -> None:  # type: ignore[no-untyped-def]
    """Issue 16, acceptance 5: killed right after the 10th coding answer is committed (the
    judge panel's layer is half done); the rerun makes the other coding calls only."""
    log = workdir / "calls.log"
    killed = biasaudit(run_args(workdir, log), workdir, kill_at=("put", SUBJECT_CALLS + 10))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len(logged_calls(log)) == SUBJECT_CALLS + 10
    with sqlite3.connect(workdir / "cache.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses WHERE kind = 'choice'").fetchone()[0] == 10
    [folder] = [p for p in (workdir / "reports" / "bx-crash").iterdir()]
    assert_resumes_exactly(workdir, log, reference)
    finished = [d for d in run_dirs(workdir) if d != folder]
    s = json.loads((finished[0] / "summary.json").read_text())
    assert s["execution"]["calls"] == 0 and s["execution"]["cache_hits"] == SUBJECT_CALLS
    assert s["execution"]["coding_cache_hits"] == 10 and s["execution"]["coding_calls"] == TOTAL_CALLS - SUBJECT_CALLS - 10
    # and a rerun of the finished run makes no call of either kind
    again = biasaudit(run_args(workdir, log), workdir)
    assert again.returncode == verdict_code(run_dirs(workdir)[-1]) and len(logged_calls(log)) == TOTAL_CALLS
    assert "0 model calls" in again.stdout and "0 calls" in again.stdout


def test_report_command_on_a_killed_run_says_how_to_resume(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    log = workdir / "calls.log"
    killed = biasaudit(run_args(workdir, log, "+model.script.die_after=5"), workdir)
    assert killed.returncode == -signal.SIGKILL
    [folder] = [p for p in (workdir / "reports" / "bx-crash").iterdir()]
    # the store still says "running": the next run (or nothing) tells; `report` refuses either way
    code, _, err = cli("report", str(folder))
    assert code == 2 and "did not finish (status: running)" in err and "biasaudit run spec=" in err


def test_ctrl_c_keeps_finished_calls_marks_the_run_and_says_how_to_resume(workdir: Path, reference) -> None:  # type: ignore[no-untyped-def]
    log = workdir / "calls.log"
    args = run_args(workdir, log, "+model.script.delay=0.05")
    proc = subprocess.Popen([sys.executable, "-m", "biasaudit.cli.app", *args], cwd=workdir, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while len(logged_calls(log)) < 10 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[-1].startswith("interrupted: finished model calls are saved; to resume, run the same command again: "
                                "biasaudit run spec=")
    assert "Traceback" not in err
    n = len(logged_calls(log))
    assert 10 <= n < TOTAL_CALLS
    with sqlite3.connect(workdir / "cache.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == n  # every answered call kept
    assert statuses(workdir) == ["interrupted"]
    [folder] = [p for p in (workdir / "reports" / "bx-crash").iterdir()]
    assert "stopped with Ctrl-C" in (folder / "INTERRUPTED.txt").read_text()
    assert_resumes_exactly(workdir, log, reference)


def test_ctrl_c_inside_a_long_generation_batch_stops_within_seconds(workdir: Path, reference) -> None:  # type: ignore[no-untyped-def]
    """Issues 39 (item 9) and 41: a batch of 8 local generations of 20 tokens at 1.5 s a
    token takes 30 s; Ctrl-C one second into the second batch stops the run within
    seconds (it used to wait for the batch to end), keeps the first batch, drops the cut
    one (progress per token step: tests/unit/engine/test_interrupt_progress.py)."""
    log = workdir / "calls.log"
    args = run_args(workdir, log, "+model.script.token_delay=1.5", "+model.script.token_steps=20",
                    "runtime.batch_size=8")
    # this checkout's package first (ENV's PYTHONPATH alone finds the installed one)
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(REPO / "framework"), str(REPO)])}
    proc = subprocess.Popen([sys.executable, "-m", "biasaudit.cli.app", *args], cwd=workdir, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while len(logged_calls(log)) < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=300)
    took = time.monotonic() - t0
    assert proc.returncode == 130, err
    assert took < 15, f"Ctrl-C took {took:.1f} s to stop a batch that had 29 s left"
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("interrupted: finished model calls are saved")
    assert len(logged_calls(log)) == 8  # the first batch, not the cut second one
    with sqlite3.connect(workdir / "cache.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 8
    assert_resumes_exactly(workdir, log, reference)


# -- Ctrl-C with openai_compat (issue 15, class 14) ------------------------------------------------

@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_with_openai_compat_stops_cleanly(workdir: Path, planted: str, presses: int) -> None:
    """Once: the response being delivered is saved, then the run stops; twice (quickly):
    it stops at once. Either way no asyncio task is left holding an exception."""
    rows = "".join(f'    - {{id: s{i}, statement: "Group {i} is lazy."}}\n' for i in range(30))
    spec = write_spec(workdir / "g.yaml", GENERATE_SPEC.replace(
        '    - {id: s1, statement: "Group A is lazy."}\n    - {id: s2, statement: "Group B is rude."}\n', rows))
    with FaultServer(latency=0.2) as server:
        env = {**os.environ, "PYTHONPATH": str(REPO), KEY_ENV: SECRET}
        proc = subprocess.Popen(
            [sys.executable, "-m", "biasaudit.cli.app", "run", f"spec={spec}", "model=openai_compat",
             f"model.base_url={server.url}", f"model.api_key_env={KEY_ENV}", "model.concurrency=8",
             *isolation(workdir)], cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not server.seen and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in range(presses):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.02)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Task exception" not in err and "Traceback" not in err, err
    [note] = list((workdir / "reports").rglob("INTERRUPTED.txt"))  # the folder says how to resume
    assert "run the same command again" in note.read_text()
    assert_no_leak(workdir, out, err)
