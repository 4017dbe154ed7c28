"""Checks made before a run writes anything: the cache and the reports folder, and
whether the run's estimated disk and memory fit the machine."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from biasaudit.errors import BiasAuditError

if TYPE_CHECKING:
    from biasaudit.plan.footprint import Footprint


def check_outputs(cache: str, reports_dir: str) -> None:
    """The cache is a file (or can be made) and the reports folder can be written,
    checked before Hydra makes a run folder or SQLite opens anything (the output-path
    rule of `fileio`: symlinks followed, no device, FIFO or pseudo file system)."""
    from biasaudit._util.fileio import check_output_dir
    from biasaudit.errors import StoreError
    from biasaudit.store.sqlite import check_cache_path

    check_cache_path(cache)
    if Path(cache).exists():
        from biasaudit.store import Store

        Store(cache, readonly=True).close()  # SQLite can read it, and it is a biasaudit cache
    check_output_dir(reports_dir, key="runtime.reports_dir", what="reports folder", error=StoreError)


class ResourceError(BiasAuditError):
    """A run's estimated disk or memory exceeds what the machine has free."""


OVERRIDE = "runtime.preflight.resources=warn runs it anyway"


def _existing(path: Path) -> Path:
    """The nearest folder of `path` that exists (a run folder is made later)."""
    p = path.resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p if p.is_dir() else p.parent


def available_memory() -> int:
    """Bytes of memory the system can give without swapping: psutil's `available` if it is
    installed, else the kernel's MemAvailable (/proc/meminfo); 0 where neither says."""
    try:
        import psutil  # not a dependency: used when the environment has it
    except ImportError:
        pass
    else:
        return int(psutil.virtual_memory().available)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reduce(footprint: Footprint, what: str) -> str:
    """The settings that make the estimate smaller, largest share first."""
    settings = ["stimuli.sample.n (fewer stimuli)", "fewer prompt conditions (factor levels, paraphrases)"]
    if what == "disk" and footprint.answer_basis.startswith("answers at max_tokens"):
        settings.insert(0, "probe.max_tokens (the estimate takes every answer at max_tokens)")
    if what == "disk":
        settings.append("runtime.reports_dir / runtime.cache on a larger disk")
    return "reduce " + ", ".join(settings[:-1]) + " or " + settings[-1]


def check_resources(footprint: Footprint, reports_dir: str, cache: str, mode: str) -> list[str]:
    """Refuse (`mode` refuse) a run whose estimated disk exceeds the free space of the
    file system it is written to, or whose estimated peak memory exceeds the available
    memory, with the number and the settings that reduce it. With `mode` warn the same
    lines are returned as warnings and the run goes on."""
    from biasaudit.plan.footprint import fmt_bytes

    problems: list[str] = []
    reports, cache_dir = _existing(Path(reports_dir)), _existing(Path(cache).parent)
    # the run folder and the cache share the free space when they share a file system
    same = os.stat(reports).st_dev == os.stat(cache_dir).st_dev
    needs = [(reports, footprint.run_folder + (footprint.cache if same else 0), reports_dir)]
    if not same:
        needs.append((cache_dir, footprint.cache, cache))
    for where, need, name in needs:
        free = shutil.disk_usage(where).free
        if need > free:
            problems.append(f"estimated {fmt_bytes(need)} on disk for {name} (free {fmt_bytes(free)}): "
                            f"{_reduce(footprint, 'disk')}")
    avail = available_memory()
    if avail and footprint.peak_rss > avail:
        problems.append(f"estimated peak memory {fmt_bytes(footprint.peak_rss)} (available {fmt_bytes(avail)}): "
                        f"{_reduce(footprint, 'memory')}")
    if problems and mode != "warn":
        raise ResourceError("; ".join(problems), hint=OVERRIDE)
    return [f"warning: {p} (runtime.preflight.resources=warn: running anyway)" for p in problems]


__all__ = ["ResourceError", "available_memory", "check_outputs", "check_resources"]
