"""The one route every audit run takes, from the command line, the Python API, a suite
or a Hydra sweep: compose once, check the outputs, plan once, run.

`prepare_jobs` does everything that can fail on bad input before anything is written.
A single run is planned there, and that plan is the one executed (`run_job` receives
it), so a command-line run composes, validates and plans its spec once; the command line
then runs it in the run folder Hydra's run mode would make (`run_in_hydra_folder`), from
that same composition. A sweep's jobs are counted by streaming instead (a sweep of
hundreds would otherwise hold every plan), and each job plans when it runs, possibly in
another process (cluster launchers).
Model weights are loaded once per process whatever the route (backends/weights.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from biasaudit._util.progress import held, stage
from biasaudit.records.summary import RunSummary
from biasaudit.runner.pipeline import Prepared, prepare, run
from biasaudit.runner.preflight import check_outputs, check_resources
from biasaudit.spec.compose import Composed, compose_many, compose_with_hydra

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from biasaudit.plan.footprint import Footprint


@dataclass
class AuditJob:
    """One run to do: its overrides as typed, its composed configuration and, for a
    single run, its plan."""

    label: str
    overrides: list[str]
    composed: Composed
    prepared: Prepared | None = None
    hydra_config: DictConfig | None = None
    """A single run's composed configuration with its `hydra` node (run folder, logging)."""


def prepare_jobs(combos: Sequence[Sequence[str]]) -> list[AuditJob]:
    """Every job composed and checked before anything runs: its cache and reports folder
    writable, its spec, data and templates valid (a single job planned, a sweep's counted)."""
    from biasaudit.runner.cost import estimate_jobs, prepared_footprint

    if len(combos) == 1:
        composed, hydra_config = compose_with_hydra(combos[0])
        jobs = [AuditJob(label=" ".join(combos[0]), overrides=list(combos[0]), composed=composed,
                         hydra_config=hydra_config)]
    else:
        jobs = [AuditJob(label=" ".join(c), overrides=list(c), composed=comp)
                for c, comp in zip(combos, compose_many(combos), strict=True)]
    for job in jobs:
        check_outputs(job.composed.config.runtime.cache, job.composed.config.runtime.reports_dir)
    if len(jobs) == 1:
        with held():  # a spec that fails to plan gets its one error line, not "planning ..." first
            jobs[0].prepared = prepare(jobs[0].composed)
            _check_resources(jobs[0].composed, [prepared_footprint(jobs[0].prepared)])
    else:
        estimates = estimate_jobs([(j.label, j.composed) for j in jobs], lookup_cache=False)
        _check_resources(jobs[0].composed, [e.footprint for e in estimates])
    return jobs


def _check_resources(composed: Composed, feet: list[Footprint]) -> None:
    """Before any model call: the jobs' run folders and cache growth together on disk,
    and the largest job's peak memory (jobs run one after another), fit the machine."""
    from biasaudit.plan.footprint import Footprint

    rt = composed.config.runtime
    total = Footprint(responses=sum(f.responses for f in feet), codes=sum(f.codes for f in feet),
                      items=sum(f.items for f in feet), report=sum(f.report for f in feet),
                      cache=sum(f.cache for f in feet),
                      peak_rss=max(f.peak_rss for f in feet), answer_basis=feet[0].answer_basis)
    for line in check_resources(total, rt.reports_dir, rt.cache, rt.preflight.resources):
        stage("%s", line)


def run_job(composed: Composed, run_dir: Path, command: list[str], prepared: Prepared | None = None) -> RunSummary:
    """Run one composed audit into `run_dir` (planning it unless `prepared` is its plan)."""
    prep = prepared if prepared is not None and prepared.composed is composed else prepare(composed)
    return run(prep, run_dir, command)


def run_in_hydra_folder(cfg: DictConfig, task: Callable[[DictConfig], object]) -> None:
    """Run `task` on a single run's configuration, composed in `prepare_jobs`, as Hydra's
    run mode (`@hydra.main`) would, but without composing it again: the logging from
    `hydra.hydra_logging`, the callbacks, then Hydra's own `run_job` (the run folder from
    `hydra.run.dir`, its `.hydra/` config.yaml, hydra.yaml and overrides.yaml, the run log
    `<hydra.job.name>.log` from `hydra.job_logging`, `hydra.job.chdir` and `env_set`, with
    `HydraConfig` set while `task` runs). A sweep still goes through `@hydra.main`: its
    launcher and sweeper own the job folders."""
    from hydra._internal.callbacks import Callbacks
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path
    from hydra.core.utils import configure_log
    from hydra.core.utils import run_job as hydra_run_job
    from hydra.types import HydraContext, RunMode
    from omegaconf import open_dict, read_write

    from biasaudit._util.paths import conf_dir

    if cfg.hydra.mode is None:
        with read_write(cfg.hydra), open_dict(cfg.hydra):
            # what `@hydra.main` adds to a run's overrides, so hydra.yaml reads the same
            cfg.hydra.overrides.hydra.append("hydra.mode=RUN")
            cfg.hydra.mode = RunMode.RUN
    if cfg.hydra.mode != RunMode.RUN:
        raise ValueError(f"not a single run: hydra.mode={cfg.hydra.mode}")
    configure_log(cfg.hydra.hydra_logging, cfg.hydra.verbose)
    callbacks = Callbacks(cfg)
    callbacks.on_run_start(config=cfg, config_name="config")
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(conf_dir())))
    ret = hydra_run_job(hydra_context=HydraContext(config_loader=loader, callbacks=callbacks), task_function=task,
                        config=cfg, job_dir_key="hydra.run.dir", job_subdir_key=None, configure_logging=True)
    callbacks.on_run_end(config=cfg, config_name="config", job_return=ret)
    _ = ret.return_value  # the task's exception, if it raised one


__all__ = ["AuditJob", "prepare_jobs", "run_in_hydra_folder", "run_job"]
