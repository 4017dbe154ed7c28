"""A sequential run (`runtime.sequential`) killed mid-look resumes without repeating a
finished call and makes the same stopping decision as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, isolation, run_dirs
from tests.helpers import comparable_summary
from tests.unit.runner.test_sequential_run import SEQ, planted

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "framework"),
                                                     os.environ.get("PYTHONPATH", "")]), "HF_HUB_OFFLINE": "1"}


def biasaudit(args: list[str], cwd: Path, kill_at: tuple[str, int] | None = None) -> subprocess.CompletedProcess[str]:
    head = ["-m", "tests.killpoints", kill_at[0], str(kill_at[1])] if kill_at else ["-m", "biasaudit.cli.app"]
    return subprocess.run([sys.executable, *head, *args], cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow  # three runs in fresh processes, one SIGKILLed
def test_killed_sequential_run_resumes_to_the_same_stop(tmp_path: Path) -> None:
    ref_dir, work = tmp_path / "ref", tmp_path / "work"
    for d in (ref_dir, work):
        (d / "reports").mkdir(parents=True)
    ref = biasaudit(["run", *SEQ, *planted(ref_dir), *isolation(ref_dir)], ref_dir)
    assert ref.returncode == 1, ref.stderr  # FAIL, decided at look 2 (40 requests)
    # one answer a batch: the scripted double hands a batch's answers over in one write,
    # so with its default 8 the kill would come after the 28th
    args = ["run", *SEQ, *planted(work), *isolation(work), "runtime.batch_size=1"]
    # killed right after the 25th answer is committed: look 1's 20, then 5 of look 2's 20
    killed = biasaudit(args, work, kill_at=("put", 25))
    assert killed.returncode == -signal.SIGKILL
    assert run_dirs(work) == []  # no summary: the run did not finish
    resumed = biasaudit(args, work)
    assert resumed.returncode == 1, resumed.stderr
    (run,) = run_dirs(work)
    s = json.loads((run / "summary.json").read_text())
    assert s["execution"]["calls"] == 15 and s["execution"]["cache_hits"] == 25  # nothing asked twice
    assert s["sequential"]["stopped_at"] == 2
    (ref_run,) = run_dirs(ref_dir)
    assert comparable_summary(run / "summary.json", resumed=True) == \
        comparable_summary(ref_run / "summary.json", resumed=True)
