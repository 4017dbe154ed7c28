"""One audit's model calls sharded over Ray tasks (`runtime.shards=N`).

The driver has built the plan. It merges any shard caches an earlier, killed run left
behind, asks the main cache which requests are still unanswered, and splits those by a
stable hash of their key into N shards. Each shard is one Ray task: it rebuilds the plan
from the composed configuration (the same spec and overrides, so the same requests and
keys), keeps the keys it was given, and answers them into its own cache file beside the
main cache (`<cache>.<plan>.shard-<i>-of-<N>.sqlite`, `<plan>` a digest of the plan's
request keys, so that audits sharing a cache never touch each other's shard files),
committing each answer as it arrives,
as a one-process run does. The driver then merges every shard cache into the main cache
the way `biasaudit merge-cache` does and removes them; the run goes on (coding, metrics,
report) once, in the driver, from the merged cache, as a cached re-run would.

Only the composed configuration (which holds no secret: API keys are named by
`api_key_env` and read from the worker's environment), the shard's request keys and
its call counts pass through Ray; the answers go through the shard cache files, which
is why the main cache's folder must be on a file system the workers share.

A shard whose worker dies leaves its finished calls in its cache file; they are merged
too, the run fails once the other shards have ended, and the same command sends only
the requests still unanswered. Coding calls (judges, NLI, embedder) stay in the driver.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biasaudit._util.progress import stage
from biasaudit.errors import BackendError, SpecError

if TYPE_CHECKING:
    from biasaudit.records.execution import ExecutionStats
    from biasaudit.runner.pipeline import Prepared
    from biasaudit.spec import AuditConfig
    from biasaudit.spec.compose import Composed
    from biasaudit.spec.models import RayConfig
    from biasaudit.store import Store

SHARD_ENV = "BIASAUDIT_SHARD"
"""Set in a shard task's process to the shard's number (1 to N) while it runs (test backends read it)."""


def shard_of(key: str, n: int) -> int:
    """The shard of a request key: stable across processes, machines and Python versions
    (SHA-256, not Python's salted `hash`)."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % n


def plan_tag(keys: Iterable[str]) -> str:
    """A short digest of a plan's request keys: the same audit (spec, data, model and
    settings) gets the same tag on every run, another audit another."""
    h = hashlib.sha256()
    for k in sorted(keys):
        h.update(k.encode("utf-8") + b"\n")
    return h.hexdigest()[:12]


def shard_cache(main: Path, tag: str, i: int, n: int) -> Path:
    """Shard i's own cache file, beside the main cache (named 1-based: `shard-1-of-2`)."""
    return main.with_name(f"{main.name}.{tag}.shard-{i + 1}-of-{n}.sqlite")


def leftover_shard_caches(main: Path, tag: str) -> list[Path]:
    """Shard caches of this plan that an earlier run did not merge (it was killed),
    whatever its number of shards; another audit's shard files on the same cache (a
    parallel run) are not touched."""
    pattern = os.path.join(glob.escape(str(main.parent)), glob.escape(f"{main.name}.{tag}") + ".shard-*-of-*.sqlite")
    return sorted(Path(p) for p in glob.glob(pattern))


def check_shards(cfg: AuditConfig, spec_file: str) -> None:
    """Settings a sharded run cannot honour, refused before any model call."""
    rt = cfg.runtime
    if rt.shards == 1:
        return
    clash = ("runtime.sequential.look_every" if rt.sequential.look_every is not None
             else "runtime.budget" if rt.budget.active
             else "runtime.batch.enabled" if rt.batch.enabled else None)
    if clash is not None:
        raise SpecError(f"runtime.shards={rt.shards} cannot be combined with {clash}", file=spec_file,
                        key="runtime.shards",
                        hint=f"run with runtime.shards=1, or without {clash} (they decide call by call in one process)")


class ShardsUnfinished(BackendError):
    """Some shards died: their finished calls are merged, the run folder is left unfinished
    (the driver writes INTERRUPTED.txt there saying how to resume)."""


@dataclass
class ShardTally:
    """What the shards did, added to the driver's execution counts."""

    shards_run: int = 0
    calls: int = 0
    new_failures: int = 0
    model_load_s: float = 0.0
    model_loads: int = 0
    seconds: float = 0.0
    """Wall-clock seconds from the first shard's start to the last shard's merge."""
    merged: int = 0
    failed: list[str] = field(default_factory=list)

    def fold(self, stats: ExecutionStats) -> None:
        """The driver's execution answered everything from the merged cache: the calls the
        shards made count as this run's calls, not as cache hits."""
        stats.calls += self.calls
        stats.cache_hits -= self.calls
        stats.new_failures += self.new_failures
        stats.model_load_s += self.model_load_s
        stats.model_loads += self.model_loads
        stats.seconds += self.seconds


def run_shards(prep: Prepared, store: Store) -> ShardTally:
    """Answer the plan's unanswered requests in `runtime.shards` Ray tasks and merge their
    caches into `store` (the main cache). Raises once every shard has ended if one failed,
    after merging what it had finished."""
    main = Path(store.path)
    tag = plan_tag(prep.plan.requests)
    with one_driver(main, tag):
        return _run_shards(prep, store, main, tag)


@contextmanager
def one_driver(main: Path, tag: str) -> Iterator[None]:
    """Only one driver shards an audit on a cache at a time: a second one would take the
    first's live shard caches for an earlier run's leftovers and merge them away while
    their shards still write. An advisory lock (flock) on a file beside the cache, dropped
    by the kernel when its holder dies, so a killed driver never blocks the next run. The
    holder removes the file when done; a driver that locked a file already removed (the
    path now names another file) has lost that race and is refused like any second driver."""
    import fcntl

    from biasaudit._util.fileio import open_append

    lock = main.with_name(f"{main.name}.{tag}.shards.lock")
    busy = BackendError(f"another run of this audit is sharding it on the cache {main} now", key="runtime.shards",
                        hint="wait for that run to finish (then run this command again: its calls are not "
                             "repeated), or give this run its own runtime.cache")
    with open_append(lock, key="runtime.cache", what="shard lock file") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy from None
        try:
            if os.stat(lock).st_ino != os.fstat(f.fileno()).st_ino:
                raise busy
        except FileNotFoundError:
            raise busy from None
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)  # still held: a driver opening it now is refused above


def _run_shards(prep: Prepared, store: Store, main: Path, tag: str) -> ShardTally:
    from biasaudit.runner.sweep_caches import merge_and_remove

    cfg = prep.composed.config
    rt = cfg.runtime
    n = rt.shards
    tally = ShardTally()
    leftovers = leftover_shard_caches(main, tag)
    if leftovers:
        tally.merged += merge_and_remove(store, leftovers)
        stage("shards: merged %d shard cache(s) an earlier run left (%d responses)", len(leftovers), tally.merged)
    requests = prep.plan.requests
    stored = store.get_many(requests)
    buckets: list[list[str]] = [[] for _ in range(n)]
    for k in requests:
        if k not in stored or (rt.retry_failed and stored[k].status == "failed"):
            buckets[shard_of(k, n)].append(k)
    todo = sum(len(b) for b in buckets)
    jobs = [(i, keys) for i, keys in enumerate(buckets) if keys]
    where = (f"Ray ({rt.ray.address or 'a local cluster'})" if rt.shard_backend == "ray"
             else f"submitit ({rt.submitit.cluster})")
    stage("shards: %d requests, %d from cache, %d to call in %d shard(s) on %s", len(requests),
          len(requests) - todo, todo, len(jobs), where)
    if not jobs:
        return tally
    t0 = time.perf_counter()
    tally.shards_run = len(jobs)
    try:
        dispatch = _on_ray if rt.shard_backend == "ray" else _on_submitit
        dispatch(prep.composed, jobs, n, main, tag, tally)
    finally:  # also after Ctrl-C or a failed shard: every finished call is kept
        files = [shard_cache(main, tag, i, n) for i, _ in jobs]
        tally.merged += merge_and_remove(store, [f for f in files if f.exists()])
    tally.seconds = time.perf_counter() - t0
    stage("shards: merged %d shard cache(s) into %s (%d responses)", len(jobs), main, tally.merged)
    if tally.failed:
        raise ShardsUnfinished(f"{len(tally.failed)} of {len(jobs)} shard(s) did not finish: {'; '.join(tally.failed)}",
                           key="runtime.shards",
                           hint="run the same command again: the finished calls of every shard are in the cache, "
                                "only the unanswered requests are sent")
    return tally


Jobs = list[tuple[int, list[str]]]
"""The shards to run: (index, request keys)."""


def _count(tally: ShardTally, i: int, n: int, got: dict[str, float]) -> None:
    tally.calls += int(got["calls"])
    tally.new_failures += int(got["new_failures"])
    tally.model_load_s += float(got["model_load_s"])
    tally.model_loads += int(got["model_loads"])
    stage("shards: shard %d of %d done: %d calls in %.1f s", i + 1, n, int(got["calls"]), got["seconds"])


def _failed(tally: ShardTally, i: int, n: int, exc: BaseException) -> None:
    reason = str(exc).strip().partition("\n")[0] or type(exc).__name__
    tally.failed.append(f"shard {i + 1} of {n} ({type(exc).__name__}: {reason[:300]})")
    stage("shards: shard %d of %d failed: %s", i + 1, n, type(exc).__name__)


def _on_ray(composed: Composed, jobs: Jobs, n: int, main: Path, tag: str, tally: ShardTally) -> None:
    """Each shard a Ray task; wait for all of them (a failed shard is noted, not raised, so
    that the others run to their end)."""
    rc = composed.config.runtime.ray
    with _ray_session(rc) as ray:
        task = ray.remote(shard_task).options(num_cpus=rc.shard_cpus, num_gpus=rc.shard_gpus,
                                              max_retries=rc.max_retries, retry_exceptions=False)
        refs = {task.remote(composed, i, n, str(shard_cache(main, tag, i, n)), keys): i for i, keys in jobs}
        try:
            waiting = list(refs)
            while waiting:
                done, waiting = ray.wait(waiting, num_returns=1)
                for ref in done:
                    try:
                        got: dict[str, float] = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        _failed(tally, refs[ref], n, exc)
                    else:
                        _count(tally, refs[ref], n, got)
        except BaseException:  # Ctrl-C: stop the shards; their finished calls are merged
            for ref in refs:
                ray.cancel(ref, force=True)
            raise


def _on_submitit(composed: Composed, jobs: Jobs, n: int, main: Path, tag: str, tally: ShardTally) -> None:
    """Each shard a job of one submitit array (SLURM, or local processes); wait for all."""
    try:
        import submitit
    except ImportError:
        raise BackendError("runtime.shard_backend=submitit needs submitit, which is not installed",
                           key="runtime.shard_backend", hint='pip install -e ".[slurm]"') from None
    sc = composed.config.runtime.submitit
    folder = Path(sc.folder) if sc.folder else main.with_name(f"{main.name}.{tag}.shard-jobs")
    ex = submitit.AutoExecutor(folder=folder, cluster=sc.cluster)
    params: dict[str, object] = {"name": "biasaudit-shard", "timeout_min": sc.timeout_min,
                                 "cpus_per_task": sc.cpus_per_task, "gpus_per_node": sc.gpus_per_node}
    if sc.mem_gb is not None:
        params["mem_gb"] = sc.mem_gb
    if sc.partition is not None:
        params["slurm_partition"] = sc.partition
    ex.update_parameters(**params)
    with ex.batch():  # one array on SLURM
        submitted = [(i, ex.submit(shard_task, composed, i, n, str(shard_cache(main, tag, i, n)), keys))
                     for i, keys in jobs]
    try:
        for i, job in submitted:
            try:
                got: dict[str, float] = job.result()
            except Exception as exc:  # noqa: BLE001 (any failure of the job: noted, the others still awaited)
                _failed(tally, i, n, exc)
            else:
                _count(tally, i, n, got)
    except BaseException:
        for _, job in submitted:
            job.cancel(check=False)
        raise
    if not tally.failed and sc.folder is None:
        shutil.rmtree(folder, ignore_errors=True)  # the jobs' pickles and logs; kept when a shard failed


@contextmanager
def _ray_session(rc: RayConfig) -> Iterator[Any]:
    """Ray, joined or started: the cluster at `address`, or a local one (no dashboard, a
    bounded object store). One this call started is shut down after; one already running
    in this process (a caller's, a test's) is used and left running."""
    try:
        import ray
    except ImportError:
        raise BackendError("runtime.shards needs Ray, which is not installed", key="runtime.shards",
                           hint='pip install -e ".[ray]" (or run with runtime.shards=1)') from None
    started = not ray.is_initialized()
    if started:
        if rc.address:
            ray.init(address=rc.address, logging_level=logging.WARNING)
        else:
            ray.init(num_cpus=rc.num_cpus, include_dashboard=False, object_store_memory=rc.object_store_memory,
                     logging_level=logging.WARNING)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def per_shard(model: Any, n: int) -> Any:
    """A served model's config for one of n shards sharing its server: `concurrency` / n
    requests in flight (at least 1), so the server sees what one process would send."""
    fields = type(model).model_fields
    if "concurrency" not in fields:
        return model
    c = max(1, int(model.concurrency) // n)
    update: dict[str, int] = {"concurrency": c}
    if "min_concurrency" in fields:
        update["min_concurrency"] = min(int(model.min_concurrency), c)
    return model.model_copy(update=update)


def shard_task(composed: Composed, i: int, n: int, cache: str, keys: list[str]) -> dict[str, float]:
    """One shard, in a Ray worker: rebuild the plan, answer `keys` into the shard's own
    cache with one backend (a local model is loaded once per shard), return the counts."""
    from biasaudit._util.secrets import watch_config
    from biasaudit.backends import audit_identity, audit_subject, build_audit_backend
    from biasaudit.data import load_stimuli
    from biasaudit.engine.executor import execute_requests
    from biasaudit.plan import compile_plan
    from biasaudit.runner.checks import apply_limits
    from biasaudit.store import Store

    os.environ[SHARD_ENV] = str(i + 1)
    try:
        # the plan as the driver compiled it (pipeline.plan_inputs, whose checks the driver
        # has passed): the same stimuli and model identity give the same request keys
        cfg = composed.config
        watch_config(cfg)  # the worker's API keys are secrets here too
        apply_limits(cfg.runtime.limits)
        stimuli = load_stimuli(cfg.stimuli, composed.spec_file, cfg.runtime.limits)
        plan = compile_plan(cfg, stimuli, audit_identity(cfg), str(composed.spec_file))
        wanted = {k: plan.requests[k] for k in keys if k in plan.requests}
        if len(wanted) != len(keys):
            raise BackendError(f"shard {i + 1} of {n}: {len(keys) - len(wanted)} of its requests are not in the plan "
                               "this worker built", key="runtime.shards",
                               hint="every worker needs the same biasaudit version, spec and data files as the driver")
        shard_cfg = cfg.model_copy(update={"model": per_shard(cfg.model, n),
                                           "nli": per_shard(cfg.nli, n) if cfg.nli is not None else None})
        store = Store(cache)
        try:
            _results, stats = execute_requests(wanted, store, lambda: build_audit_backend(shard_cfg),
                                               progress=False, label=f"shard {i + 1} of {n}", identity=plan.identity,
                                               who=audit_subject(cfg))
        finally:
            store.close()
        return {"calls": stats.calls, "new_failures": stats.new_failures, "model_load_s": stats.model_load_s,
                "model_loads": stats.model_loads, "seconds": stats.seconds}
    finally:
        os.environ.pop(SHARD_ENV, None)
