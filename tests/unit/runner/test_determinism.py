"""Determinism (issue 11): the same spec, model and seed give a byte-identical
summary.json apart from the keys listed in tests.helpers.VOLATILE_KEYS (timestamp, run
id, timings). Runs are separate processes with different hash seeds (so set and dict
iteration orders differ) and separate fresh caches (so every answer is computed again)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_dirs
from tests.helpers import biaxis_spec, comparable_summary, tp_spec, verdict_code

REPO = Path(__file__).resolve().parents[3]


def run_fresh(spec: Path, workdir: Path, name: str, hash_seed: int, *extra: str) -> Path:
    out = workdir / name
    (out / "reports").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": str(hash_seed)}
    done = subprocess.run(
        [sys.executable, "-m", "biasaudit.cli.app", "run", f"spec={spec}", *extra, f"runtime.cache={out / 'cache.sqlite'}",
         f"runtime.reports_dir={out / 'reports'}", "runtime.progress=false"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    [run] = run_dirs(out)
    assert done.returncode == verdict_code(run), done.stderr
    return run / "summary.json"


@pytest.mark.parametrize("which", ["biaxis", "bias_score"])
@pytest.mark.slow  # two runs in subprocesses per spec
def test_same_spec_model_seed_give_identical_summary(workdir: Path, which: str) -> None:
    if which == "biaxis":  # judge panel, cluster bootstrap, verdict
        spec, extra = biaxis_spec(workdir)
    else:  # token-probability bias score by group, Wilson intervals
        spec, extra = tp_spec(workdir, 20), ["model=scripted"]
    a = run_fresh(spec, workdir, "a", 1, *extra)
    b = run_fresh(spec, workdir, "b", 2, *extra)
    assert a.read_bytes() != b.read_bytes()  # the volatile keys do differ ...
    assert comparable_summary(a) == comparable_summary(b)  # ... and nothing else
