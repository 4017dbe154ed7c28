"""The one route every audit run takes, from the command line, the Python API, a suite
or a Hydra sweep: compose once, check the outputs, plan once, run.

`prepare_jobs` does everything that can fail on bad input before anything is written.
A single run is planned there, and that plan is the one executed (`run_job` receives
it), so a command-line run composes, validates and plans its spec once. A sweep's jobs
are counted by streaming instead (a sweep of hundreds would otherwise hold every plan),
and each job plans when it runs, possibly in another process (cluster launchers).
Model weights are loaded once per process whatever the route (backends/weights.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from biasaudit._util.progress import held
from biasaudit.records.summary import RunSummary
from biasaudit.runner.pipeline import Prepared, prepare, run
from biasaudit.runner.preflight import check_outputs
from biasaudit.spec.compose import Composed, compose_many


@dataclass
class AuditJob:
    """One run to do: its overrides as typed, its composed configuration and, for a
    single run, its plan."""

    label: str
    overrides: list[str]
    composed: Composed
    prepared: Prepared | None = None


def prepare_jobs(combos: list[list[str]]) -> list[AuditJob]:
    """Every job composed and checked before anything runs: its cache and reports folder
    writable, its spec, data and templates valid (a single job planned, a sweep's counted)."""
    from biasaudit.runner.cost import estimate_jobs

    jobs = [AuditJob(label=" ".join(c), overrides=list(c), composed=comp)
            for c, comp in zip(combos, compose_many(combos), strict=True)]
    for job in jobs:
        check_outputs(job.composed.config.runtime.cache, job.composed.config.runtime.reports_dir)
    if len(jobs) == 1:
        with held():  # a spec that fails to plan gets its one error line, not "planning ..." first
            jobs[0].prepared = prepare(jobs[0].composed)
    else:
        estimate_jobs([(j.label, j.composed) for j in jobs], lookup_cache=False)
    return jobs


def run_job(composed: Composed, run_dir: Path, command: list[str], prepared: Prepared | None = None) -> RunSummary:
    """Run one composed audit into `run_dir` (planning it unless `prepared` is its plan)."""
    prep = prepared if prepared is not None and prepared.composed is composed else prepare(composed)
    return run(prep, run_dir, command)


__all__ = ["AuditJob", "prepare_jobs", "run_job"]
