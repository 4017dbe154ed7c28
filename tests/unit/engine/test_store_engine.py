"""Store, cache and resume with the scripted counting backend."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from biasaudit.engine import execute_plan
from biasaudit.runner.pipeline import prepare
from biasaudit.spec.compose import compose
from biasaudit.store import Store
from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec, verdict_code


def test_second_execution_is_all_cache_hits(workdir: Path) -> None:
    spec = tp_spec(workdir, 6)
    prep = prepare(compose([f"spec={spec}", "model=scripted", *isolation(workdir)]))
    store = Store(workdir / "c.sqlite")
    from biasaudit.backends.scripted import ScriptedBackend

    backend = ScriptedBackend({})
    _, s1 = execute_plan(prep.plan, store, lambda: backend, progress=False)
    assert (s1.calls, s1.cache_hits, s1.requests) == (12, 0, 12)
    built = []
    _, s2 = execute_plan(prep.plan, store, lambda: built.append(1) or backend, progress=False)
    assert (s2.calls, s2.cache_hits) == (0, 12)
    assert built == []  # the model is never even built when everything is cached
    assert store.count() == 12


def test_failures_are_stored_counted_and_retried_only_when_asked(workdir: Path) -> None:
    spec = tp_spec(workdir, 5)
    prep = prepare(compose([f"spec={spec}", "model=scripted", *isolation(workdir)]))
    store = Store(workdir / "c.sqlite")
    from biasaudit.backends.scripted import ScriptedBackend

    _, s1 = execute_plan(prep.plan, store, lambda: ScriptedBackend({"fail_every": 3}), progress=False)
    assert s1.failures == 3 and s1.new_failures == 3
    _, s2 = execute_plan(prep.plan, store, lambda: ScriptedBackend({}), progress=False)
    assert s2.calls == 0 and s2.failures == 3
    _, s3 = execute_plan(prep.plan, store, lambda: ScriptedBackend({}), retry_failed=True, progress=False)
    assert s3.calls == 3 and s3.failures == 0


def _run_subprocess(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    return subprocess.run([sys.executable, "-m", "biasaudit.cli.app", "run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # crash safety: a subprocess run killed and rerun
@pytest.mark.serial  # a killed subprocess: alone, not beside another test's processes
def test_sigkill_then_rerun_makes_each_call_exactly_once(workdir: Path) -> None:
    spec = tp_spec(workdir, 10)
    log = workdir / "calls.log"
    base = [f"spec={spec}", "model=scripted", f"+model.script.calls_log={log}", *isolation(workdir)]
    first = _run_subprocess([*base, "+model.script.die_after=7", "runtime.batch_size=1"], workdir)
    assert first.returncode == -9, first.stderr  # killed by SIGKILL mid-run
    assert len(log.read_text().splitlines()) == 7
    rows = sqlite3.connect(workdir / "cache.sqlite").execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert rows == 7  # every finished call was committed before the kill
    second = _run_subprocess(base, workdir)
    assert second.returncode == verdict_code(run_dirs(workdir)[-1]), second.stderr
    calls = log.read_text().splitlines()
    assert len(calls) == 20 and len(set(calls)) == 20  # 20 requests, each called once over both runs
    summary = json.loads((run_dirs(workdir)[-1] / "summary.json").read_text())
    assert summary["execution"]["calls"] == 13 and summary["execution"]["cache_hits"] == 7
