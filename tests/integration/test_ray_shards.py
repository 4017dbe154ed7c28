"""Issue 42, section 2: one audit sharded on Ray (`runtime.shards=N`), on a local Ray
cluster of 2 CPUs started once for this module.

- A sharded run (N=2, N=3) of a shipped spec (crows_pairs_tp, 40 pairs, 80 scoring
  requests) writes the same summary.json as the one-process run, apart from timings,
  paths and run ids: every estimate, interval, verdict and count is compared exactly.
- A shard killed mid-run (its Ray worker SIGKILLs itself after 5 calls, through the
  scripted backend's `die_after` / `die_shard` / `die_marker`) fails the run, and the
  same command run again completes; the scripted backend's call log shows every request
  called exactly once across both runs (no finished call repeated, none lost).
- The recipe in docs/running-at-scale.md ("Sharding one audit on Ray") runs as written,
  with one substitution said here: the scripted test double for `model=smollm2`, so
  the test measures the sharding, not SmolLM2's speed on two shared cores.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from biasaudit.store import Store
from tests.conftest import isolation, run_dirs
from tests.helpers import REPO, comparable_summary

pytestmark = [pytest.mark.slow, pytest.mark.serial]

SPEC = ["spec=crows_pairs_tp", "model=scripted"]
REQUESTS = 80  # 40 CrowS-Pairs pairs, two sentences each


@pytest.fixture(scope="module", autouse=True)
def ray_cluster() -> Iterator[None]:
    """One local cluster of 2 CPUs for the module; `runtime.shards` joins the running one."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200_000_000, logging_level=logging.WARNING)
    try:
        yield
    finally:
        ray.shutdown()


def _summary(workdir: Path) -> dict[str, Any]:
    [d] = run_dirs(workdir)
    out: dict[str, Any] = json.loads((d / "summary.json").read_text())
    return out


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one-process run's summary.json (no Ray)."""
    from biasaudit.cli.app import main

    wd = tmp_path_factory.mktemp("single")
    (wd / "reports").mkdir()
    assert main(["run", "--fail-on", "never", *SPEC, *isolation(wd)]) == 0
    assert _summary(wd)["execution"]["calls"] == REQUESTS
    [d] = run_dirs(wd)
    return d / "summary.json"


def _shard_files(workdir: Path) -> list[Path]:
    return sorted(workdir.glob("cache.sqlite.*shard-*"))  # the shard caches and submitit's job folder


@pytest.mark.parametrize("n", [2, 3])
def test_sharded_run_equals_single_process_run(workdir: Path, cli, single: Path, n: int) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", "--fail-on", "never", *SPEC, f"runtime.shards={n}", *isolation(workdir))
    assert code == 0, err
    assert f"to call in {n} shard(s) on Ray" in err
    assert f"merged {n} shard cache(s)" in err
    assert _shard_files(workdir) == []  # merged into runtime.cache and removed
    sharded = _summary(workdir)
    assert sharded["execution"]["calls"] == REQUESTS and sharded["execution"]["cache_hits"] == 0
    # byte for byte, apart from when and where it ran (tests/helpers.VOLATILE_KEYS): every
    # estimate, interval, verdict, count (calls and cache hits too) and table
    [d] = run_dirs(workdir)
    assert comparable_summary(d / "summary.json") == comparable_summary(single)


def test_killed_shard_resumes_alone(workdir: Path, cli, single: Path) -> None:  # type: ignore[no-untyped-def]
    log = workdir / "calls.log"
    script = [f"+model.script.calls_log={log}", "+model.script.die_after=5", "+model.script.die_shard=2",
              f"+model.script.die_marker={workdir / 'killed'}"]
    command = ["run", "--fail-on", "never", *SPEC, "runtime.shards=2", *script, *isolation(workdir)]
    code, out, err = cli(*command)
    assert code == 2, err
    assert "1 of 2 shard(s) did not finish: shard 2 of 2" in err
    assert (workdir / "killed").is_file()
    [note_file] = (workdir / "reports").rglob("INTERRUPTED.txt")  # the folder says it did not finish, and how
    note = note_file.read_text()
    assert "1 of 2 shard(s) did not finish" in note and "runtime.shards=2" in note
    assert not (note_file.parent / "summary.json").exists()
    first = log.read_text().split()
    store = Store(workdir / "cache.sqlite")
    try:  # every call made before the kill was kept: the survivor's and the dead shard's 5
        assert store.count() == len(first)
    finally:
        store.close()
    assert 5 < len(first) < REQUESTS
    assert _shard_files(workdir) == []
    code, out, err = cli(*command)  # the same command
    assert code == 0, err
    assert f"{len(first)} from cache, {REQUESTS - len(first)} to call in 1 shard(s)" in err  # only the dead shard
    calls = log.read_text().split()
    assert len(calls) == REQUESTS and len(set(calls)) == REQUESTS  # none repeated, none lost
    [d] = run_dirs(workdir)
    again = json.loads((d / "summary.json").read_text())
    assert again["execution"]["calls"] == REQUESTS - len(first)
    assert again["execution"]["cache_hits"] == len(first)
    assert comparable_summary(d / "summary.json", resumed=True) == comparable_summary(single, resumed=True)


def test_submitit_local_shards_equal_single_process_run(workdir: Path, cli, single: Path) -> None:  # type: ignore[no-untyped-def]
    """`shard_backend=submitit` with submitit's local executor (SLURM arrays' code path)."""
    code, out, err = cli("run", "--fail-on", "never", *SPEC, "runtime.shards=2", "runtime.shard_backend=submitit",
                         "runtime.submitit.cluster=local", "runtime.submitit.timeout_min=10", *isolation(workdir))
    assert code == 0, err
    assert "to call in 2 shard(s) on submitit (local)" in err and "merged 2 shard cache(s)" in err
    assert _shard_files(workdir) == []  # the shard caches and the jobs' folder are removed
    [d] = run_dirs(workdir)
    assert comparable_summary(d / "summary.json") == comparable_summary(single)


def recipe(name: str) -> list[str]:
    text = (REPO / "docs" / "running-at-scale.md").read_text()
    m = re.search(rf"<!-- recipe: {name} -->\n```\n(.*?)\n```", text, re.S)
    assert m, f"docs/running-at-scale.md has no recipe {name!r}"
    return [line.split("  #")[0].strip() for line in m.group(1).splitlines() if line.strip()]


def test_docs_recipe_runs_as_written(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    lines = recipe("ray-shards")
    assert len(lines) == 2 and all(line.startswith("biasaudit run ") for line in lines)
    for i, line in enumerate(lines):
        argv = shlex.split(line.replace("model=smollm2", "model=scripted"))[1:]
        code, out, err = cli(*argv, *isolation(workdir))
        assert code in (0, 1, 3), err  # the verdict's exit code (a recipe keeps --fail-on's default)
        assert _shard_files(workdir) == []
        summaries = [json.loads((d / "summary.json").read_text()) for d in run_dirs(workdir)]
        assert len(summaries) == i + 1
    first, second = sorted(summaries, key=lambda s: s["run_id"])
    assert first["execution"]["calls"] == REQUESTS
    assert second["execution"]["calls"] == 0 and second["execution"]["cache_hits"] == REQUESTS
    assert first["metrics"] == second["metrics"]
