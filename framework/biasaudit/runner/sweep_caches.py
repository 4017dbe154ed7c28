"""Per-job caches for sweeps on cluster launchers, merged after the sweep.

SQLite's WAL mode needs shared memory, so one cache file cannot be shared by jobs on
different nodes (or over NFS). Under a launcher that may place jobs on other machines
(submitit, ray: anything but Hydra's basic and joblib launchers, which run on this
host), each job writes its own cache file in a folder beside the main cache, and
`biasaudit run -m` merges them into the main cache once the sweep has finished, as
`biasaudit merge-cache` would. `runtime.job_caches=false` keeps one shared file;
`true` asks for per-job files with any launcher.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from biasaudit.store import Store

log = logging.getLogger(__name__)

SAME_HOST_LAUNCHERS = ("basic", "joblib")
MAX_MERGE_FILES = 10_000
"""Cache files one `biasaudit merge-cache` merges (a sweep has at most 10,000 jobs)."""


def plan_job_caches(first_job: Any) -> tuple[Path, Path] | None:
    """(main cache, folder for the jobs' caches) when this sweep's jobs should write their
    own cache files, from the first job's composed config; None for one shared file."""
    runtime = first_job.config.runtime
    launcher = first_job.choices.get("hydra/launcher", "basic")
    wanted = runtime.job_caches if runtime.job_caches is not None else launcher not in SAME_HOST_LAUNCHERS
    if not wanted or runtime.job_cache_dir:
        return None
    main = Path(runtime.cache).expanduser().resolve()
    folder = main.parent / "job-caches" / time.strftime("%Y%m%d-%H%M%S")
    n = 0
    while folder.exists():  # two sweeps started within a second
        n += 1
        folder = folder.with_name(f"{folder.name.split('.')[0]}.{n}")
    return main, folder


def job_runtime(runtime: Any, job_num: int) -> Any:
    """The runtime of one job of such a sweep: its own cache file, and the converted
    models kept beside the main cache (where every job finds them, not once per job)."""
    if not runtime.job_cache_dir:
        return runtime
    folder = Path(runtime.job_cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    models = runtime.models_dir or str(Path(runtime.cache).expanduser().resolve().parent / "models")
    return runtime.model_copy(update={"cache": str(folder / f"job-{job_num}.sqlite"), "models_dir": models})


def merge_job_caches(main: Path, folder: Path) -> tuple[int, int]:
    """Merge every job's cache into the main cache and remove the merged files; returns
    (files merged, responses added or replaced)."""
    from biasaudit.store import Store

    files = sorted(folder.glob("job-*.sqlite")) if folder.is_dir() else []
    files = [f for f in files if not _same_file(f, main)]  # never the main cache itself (nor removed)
    if not files:
        return 0, 0
    store = Store(main)
    try:
        added = merge_and_remove(store, files)
    finally:
        store.close()
    try:
        folder.rmdir()
        folder.parent.rmdir()  # only when no other sweep's folder is left
    except OSError:
        pass
    log.info("merged %d job caches into %s (%d responses added)", len(files), main, added)
    return len(files), added


def merge_and_remove(store: Store, files: list[Path]) -> int:
    """Merge each cache file into the open `store` (as `biasaudit merge-cache` does: new
    keys added, an answer replaces a stored failure, never the other way round), then
    remove the merged files and their SQLite sidecars; returns the responses added."""
    added = 0
    for f in files:
        added += store.merge_from(f)
    for f in files:
        for extra in (f, f.with_name(f.name + "-wal"), f.with_name(f.name + "-shm")):
            extra.unlink(missing_ok=True)
    return added


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


SIDECARS = ("-wal", "-shm", "-journal")
"""SQLite's files beside a database (a shell glob such as `caches/*` picks them up)."""


def merge_sources(into: Path, sources: list[Path]) -> list[Path]:
    """The cache files `biasaudit merge-cache` merges into `into`, checked before the
    target is created or touched: each a file (a folder is refused, with how to name the
    files in it), none of them the target (by path, through a symlink or a hard link) or
    one of the target's SQLite sidecar files, none given twice."""
    from biasaudit.errors import StoreError

    if len(sources) > MAX_MERGE_FILES:
        raise StoreError(f"{len(sources)} cache files, over the limit of {MAX_MERGE_FILES:,} per merge",
                         file=str(sources[0]), hint="merge them in several commands")
    seen: set[Path] = set()
    for src in sources:
        if src.is_dir():
            raise StoreError("a source is a directory, not a cache file", file=str(src),
                             hint=f"name the cache files in it (e.g. {src}/job-*.sqlite), leaving out the target")
        if _same_file(src, into):
            raise StoreError("a cache cannot be merged into itself", file=str(src), hint="give another target")
        if any(src.name == into.name + s and _same_file(src.parent, into.parent) for s in SIDECARS):
            raise StoreError("a source is the target's SQLite journal, not a cache", file=str(src),
                             hint="leave the target's -wal, -shm and -journal files out of the sources")
        if src.resolve() in seen:
            raise StoreError("a source cache is given twice", file=str(src), hint="give each source once")
        seen.add(src.resolve())
    return sources
