"""Issue 19: the cluster launchers run real `biasaudit run -m` sweeps. submitit's local
executor (the code path of SLURM arrays) and a local Ray cluster (dashboard off, small
object store) each run a 2-job sweep; under both, each job writes its own cache file and
the command merges them into the main cache afterwards. The jobs answer on the scripted
backend: the model side of sweeps is covered on SmolLM2 by test_sweep_joblib."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasaudit.store import Store
from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec

pytestmark = pytest.mark.slow


def _sweep(workdir: Path, cli, launcher: list[str]) -> list[dict]:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 2)
    code, out, err = cli("run", "--fail-on", "never", "-m", *launcher, f"spec={spec}", "model=scripted",
                         "metrics.0.mode=ar_full,ar_shared", *isolation(workdir))
    assert code == 0, err
    assert "merged 2 job cache(s)" in out
    assert not (workdir / "job-caches").exists()  # merged files are removed
    dirs = run_dirs(workdir)
    assert len(dirs) == 2 and len({d.parent for d in dirs}) == 1
    summaries = [json.loads((d / "summary.json").read_text()) for d in dirs]
    for s in summaries:  # each job had its own empty cache: it asked all 4 sentences itself
        assert s["execution"]["calls"] == 4 and s["execution"]["cache_hits"] == 0
        assert s["execution"]["failures"] == 0
    store = Store(workdir / "cache.sqlite")
    try:
        assert store.count() == 4  # the two jobs' identical answers, merged into one copy each
        assert store.db.execute("SELECT status, COUNT(*) FROM responses GROUP BY status").fetchall() == [("ok", 4)]
    finally:
        store.close()
    return summaries


def _rerun_from_cache(workdir: Path, cli, first: list[dict]) -> None:  # type: ignore[no-untyped-def]
    """The merged cache answers the whole sweep again on this host: no model call, the
    same estimates the cluster jobs reported."""
    for d in run_dirs(workdir):
        (d / "summary.json").rename(d / "summary.cluster.json")
    code, out, err = cli("run", "--fail-on", "never", "-m", f"spec={workdir / 'tp-test.yaml'}", "model=scripted",
                         "metrics.0.mode=ar_full,ar_shared", *isolation(workdir))
    assert code == 0, err
    assert "merged" not in out  # the basic launcher shares the one cache file
    again = [json.loads(p.read_text()) for p in sorted((workdir / "reports").rglob("summary.json"))]
    assert len(again) == 2
    assert all(s["execution"]["calls"] == 0 and s["execution"]["cache_hits"] == 4 for s in again)
    before = sorted(json.dumps(s["metrics"], sort_keys=True) for s in first)
    after = sorted(json.dumps(s["metrics"], sort_keys=True) for s in again)
    assert before == after


def test_submitit_local_sweep(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    first = _sweep(workdir, cli, ["hydra/launcher=submitit_local", "hydra.launcher.cpus_per_task=1",
                                  "hydra.launcher.timeout_min=10"])
    _rerun_from_cache(workdir, cli, first)


def test_ray_local_sweep(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    import ray

    try:
        first = _sweep(workdir, cli, ["hydra/launcher=ray_local", "+hydra.launcher.ray.init.num_cpus=2"])
        _rerun_from_cache(workdir, cli, first)
    finally:
        # Hydra's Ray launcher leaves Ray running in this process; its raylet would keep
        # writing warnings (a nearly full disk, say) into later tests' stderr
        ray.shutdown()
