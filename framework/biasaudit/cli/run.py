"""`biasaudit run`: compose, check and plan the jobs (runner/jobs.py), run them in their
run folders (Hydra makes them; a sweep is Hydra's multirun), print each job's line and
end with the sweep or suite table, the JUnit file and the exit code (cli/run_end.py)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biasaudit.cli.common import (
    EXIT_INTERNAL,
    OVERRIDES_HELP,
    error_lines,
    fail,
    gated_overrides,
    log_traceback,
    print_traceback,
    with_overrides,
)
from biasaudit.errors import USER_ERRORS, BiasAuditError, user_error
from biasaudit.runner.sweeps import sweep_combinations

if TYPE_CHECKING:
    from collections.abc import Callable

    from omegaconf import DictConfig

    from biasaudit.records.summary import RunSummary
    from biasaudit.runner.jobs import AuditJob
    from biasaudit.spec.override_gate import GatedOverrides


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    from biasaudit.verdicts.gating import add_gate_args

    fmt = argparse.RawDescriptionHelpFormatter
    r = sub.add_parser("run", help="run an audit and write its report", formatter_class=fmt,
                       description="Compose the config, call the model (cached, resumable), measure, judge and "
                                   "write reports/<audit>/<run>/ (`biasaudit run path/to/spec.yaml` is "
                                   "`biasaudit run spec=path/to/spec.yaml`). Exit code: 0 all thresholds PASS, 1 any FAIL, "
                                   "3 INCONCLUSIVE only (see --fail-on), 4 could not measure (more than "
                                   "validity.max_failed_share of the model requests failed; also under --fail-on "
                                   "fail), 2 user error, 130 interrupted; a sweep or suite exits with its worst "
                                   "job's code (130 > 2 > 4 > 1 > 3 > 0).", epilog=OVERRIDES_HELP)
    r.add_argument("-m", "--multirun", action="store_true",
                   help="sweep: `a=1,2` runs one job per value (Hydra multirun); one run folder per job")
    r.add_argument("--retry-failed", action="store_true", help="send requests that failed before to the model again")
    add_gate_args(r)
    r.set_defaults(fn=cmd_run)
    with_overrides(r)
    return r


def _preflight(overrides: GatedOverrides, multirun: bool) -> list[AuditJob]:
    """Every job's spec, data, templates and model, checked before anything runs (a single
    run planned, the plan it then executes; a sweep's plans counted by streaming)."""
    from biasaudit.runner.jobs import prepare_jobs

    return prepare_jobs(sweep_combinations(list(overrides)) if multirun else [overrides])


def junit_after_error(args: argparse.Namespace, line: str) -> None:
    """`run --junit PATH` stopped by a user error that `cmd_run` wrote no JUnit file for
    (an unknown flag, an error raised outside its checks): one errored test case."""
    if getattr(args, "command", None) != "run" or not getattr(args, "junit", None) or getattr(args, "junit_done", False):
        return
    from biasaudit.report.junit import write_junit_error

    args.junit_done = True
    try:
        write_junit_error(args.junit, line)
    except BiasAuditError as err:
        fail(err)


def cmd_run(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.report.junit import check_junit_path, write_junit_error
    from biasaudit.verdicts.gating import gate_flags

    if args.junit:  # before anything runs: a bad path must not cost a run
        try:
            check_junit_path(args.junit)
        except BiasAuditError as exc:
            args.junit_done = True  # nowhere to write it
            return fail(exc)

    def stop(exc: BiasAuditError | None, line: str | None = None) -> int:
        """A user error that stopped the command before its jobs ran: one line on stderr,
        and with --junit a file with one errored test case, so CI shows why."""
        lines = error_lines(exc) if exc is not None else [line or "error"]
        if exc is not None:
            fail(exc)
        else:
            print(lines[0], file=sys.stderr)
        if args.junit:
            args.junit_done = True
            more = f" (and {len(lines) - 1} more error(s))" if len(lines) > 1 else ""
            try:
                write_junit_error(args.junit, lines[0] + more)
            except BiasAuditError as err:
                fail(err)
        return 2

    try:  # every override through the gate first: what runs, the manifest and the re-run line hold only its output
        overrides = gated_overrides(rest, "run")
    except BiasAuditError as exc:
        return stop(exc)
    rest = list(overrides.typed)
    # the command as typed (after the gate), for the manifest and the "how to resume" message
    typed = ["biasaudit", "run", *(["-m"] if args.multirun else []),
             *(["--retry-failed"] if args.retry_failed else []), *gate_flags(args), *rest]
    if args.retry_failed:
        overrides = overrides.plus("runtime.retry_failed=true")
    try:
        from biasaudit.spec.suite import load_suite

        found = load_suite(list(rest))
        if found is not None:
            return _run_suite(found, list(rest), overrides, args, typed)
        jobs = _preflight(overrides, args.multirun)
    except BiasAuditError as exc:
        return stop(exc)
    except Exception as exc:  # Hydra's override grammar errors; the environment's (a full disk)
        err = user_error(exc) if isinstance(exc, USER_ERRORS) else None
        if err is not None:
            log_traceback(exc)
            return stop(err)
        if type(exc).__module__.startswith(("hydra", "omegaconf")):
            return stop(None, f"error: overrides: {str(exc).splitlines()[0]} (hint: see `biasaudit run --help`)")
        raise
    from biasaudit.runner.sweep_caches import merge_job_caches, plan_job_caches

    try:
        caches = plan_job_caches(jobs[0].composed) if args.multirun else None
    except BiasAuditError as exc:
        return stop(exc)
    if caches is not None:
        overrides = overrides.plus(f"runtime.job_cache_dir={caches[1]}")
    code = _run_jobs(overrides, args, typed, jobs)
    args.junit_done = True  # the jobs' verdicts and errors are in it
    if caches is not None:
        n, added = merge_job_caches(*caches)
        print(f"merged {n} job cache(s) into {caches[0]}: {added} responses added")
    return code


def _kinds(kinds: dict[str, int]) -> str:
    """' (timeout 3, http_5xx 2; --retry-failed sends them again)' when anything failed."""
    if not kinds:
        return ""
    return " (" + ", ".join(f"{k} {n}" for k, n in kinds.items()) + "; --retry-failed sends them again)"


def _run_suite(found: Any, raw: list[str], overrides: GatedOverrides, args: argparse.Namespace,
               command: list[str]) -> int:
    from biasaudit.cli.run_end import end_suite
    from biasaudit.runner.suite import run_suite

    suite, path = found
    extra = ["runtime.retry_failed=true"] if "runtime.retry_failed=true" in overrides else []
    user = [ov for ov in raw if not ov.startswith("spec=")] + extra
    try:
        summary, out_dir = run_suite(suite, path, user, args.multirun, command)
    except KeyboardInterrupt:
        print(f"interrupted: finished model calls are saved; to resume, run the same command again: "
              f"{shlex.join(command)}", file=sys.stderr)
        return 130
    t = summary.totals
    print(f"{suite.name}: overall {summary.overall}; {t.runs} runs, {t.requests} requests, "
          f"{t.calls} model calls, {t.failures} failed")
    print(f"report: {out_dir / 'report.html'}")
    return end_suite(summary, out_dir, fail_on=args.fail_on, junit=args.junit)


def _run_jobs(overrides: GatedOverrides, args: argparse.Namespace, command: list[str], jobs: list[AuditJob]) -> int:
    """Run the jobs, each in its run folder: a single run from the configuration composed
    and planned in preflight (Hydra's run mode without composing again), a sweep through
    `@hydra.main` (its sweeper and launcher make the job folders and compose each job)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from biasaudit.cli.run_end import end_jobs
    from biasaudit.records.jobs import JobOutcome
    from biasaudit.report.outcome import final_line
    from biasaudit.runner.jobs import run_in_hydra_folder, run_job
    from biasaudit.runner.sweep_caches import job_runtime
    from biasaudit.spec.compose import record_hydra_overrides, to_audit_config
    from biasaudit.spec.override_gate import gate
    from biasaudit.verdicts.gating import Ledger

    # a single run was composed and planned before: that composition makes its run folder
    # and that plan runs (a `hydra.mode=MULTIRUN` override still goes to Hydra, as before)
    ready = jobs[0] if len(jobs) == 1 and not args.multirun else None
    single = ready.hydra_config if ready is not None else None
    if single is not None and single.hydra.mode not in (None, RunMode.RUN):
        single = None
    # Launchers such as joblib run jobs in other processes: every job appends its outcome
    # to a ledger file named in the environment they inherit.
    ledger = Ledger()

    def task(cfg: DictConfig) -> RunSummary | None:
        hc = HydraConfig.get()
        choices = {k: str(v) for k, v in hc.runtime.choices.items() if v is not None}
        run_dir = Path(hc.runtime.output_dir)
        job = JobOutcome(job=hc.job.num if args.multirun else 0, overrides=list(hc.overrides.task))
        try:
            if ready is not None:
                composed = ready.composed
            else:
                composed = to_audit_config(cfg, choices, gate(hc.overrides.task))  # a sweep's job, gated again
            # a cluster sweep's job writes its own cache file (sweep_caches)
            if composed.config.runtime.job_cache_dir:
                rt = job_runtime(composed.config.runtime, int(hc.job.num))
                composed.config = composed.config.model_copy(update={"runtime": rt})
            job = JobOutcome(job=job.job, overrides=composed.overrides)
            record_hydra_overrides(run_dir, composed.overrides)
            summary = run_job(composed, run_dir, command, ready.prepared if ready is not None else None)
        except Exception as exc:  # Hydra would print its own report of any exception and exit 1
            err = user_error(exc)
            if err is None:  # a bug: its traceback, and exit code 70 once the jobs are done
                print_traceback(exc)
                Ledger.record(JobOutcome(job=job.job, overrides=job.overrides,
                                         error=f"internal error: {type(exc).__name__}", internal=True))
                return None
            log_traceback(exc)
            _remove_stub(run_dir, Path(str(cfg.runtime.reports_dir)))
            fail(err)
            Ledger.record(JobOutcome(job=job.job, overrides=job.overrides, error=err.one_line()))
            return None
        Ledger.record(JobOutcome(job=job.job, overrides=job.overrides, overall=summary.overall,
                                 measured=summary.measured, unmeasured_reason=summary.unmeasured_reason,
                                 run_dir=str(run_dir)))
        ex = summary.execution
        coding = (f"; coding {ex.coding_requests} requests, {ex.coding_cache_hits} from cache, "
                  f"{ex.coding_calls} calls") if ex.coding_requests else ""
        # the run stage: model calls and the coding stage together
        coding_s = f" (coding {ex.coding_s:.2f}s)" if ex.coding_s else ""
        print(
            f"{summary.audit.name}: {ex.requests} requests, {ex.cache_hits} from cache, {ex.calls} model calls, "
            f"{ex.failures} failed{_kinds(ex.failures_by_kind)}{coding}; run stage {ex.run_stage_s:.2f}s{coding_s}"
        )
        print(f"report: {run_dir / 'report.html'}")
        print(final_line(summary), flush=True)
        return summary

    saved = sys.argv
    try:
        if single is not None:
            run_in_hydra_folder(single, task)
        else:
            _hydra_main(task, overrides, multirun=args.multirun)
    except KeyboardInterrupt:
        print(f"interrupted: finished model calls are saved; to resume, run the same command again: "
              f"{shlex.join(command)}", file=sys.stderr)
        return 130
    finally:
        sys.argv = saved
        entries = ledger.entries()
        ledger.close()
    code = end_jobs(entries, multirun=args.multirun, fail_on=args.fail_on, junit=args.junit)
    if any(e.internal for e in entries):
        print("error: internal error in biasaudit (a bug: the traceback above says where; please report it)",
              file=sys.stderr)
        return EXIT_INTERNAL
    return code


def _hydra_main(task: Callable[[DictConfig], RunSummary | None], overrides: GatedOverrides, *,
                multirun: bool) -> None:
    """`task` under `@hydra.main`, on the gated overrides (a sweep: Hydra composes each job;
    the run log is `cli.log` by `hydra.job.name` in conf/config.yaml). `@hydra.main` reads
    its command line from `sys.argv`, so that is set here and only here, from the gate's output."""
    import hydra

    from biasaudit._util.paths import conf_dir
    from biasaudit.spec.override_gate import GatedOverrides

    if not isinstance(overrides, GatedOverrides):
        raise TypeError("_hydra_main takes the gate's output: biasaudit.spec.override_gate.gate(overrides)")
    sys.argv = ["biasaudit", *(["--multirun"] if multirun else []), *overrides]
    hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")(task)()


def _remove_stub(run_dir: Path, reports_dir: Path) -> None:
    """A run folder Hydra made for a run that never started (no manifest.json yet) holds
    only Hydra's own files: remove it, and the folders made for it that are left empty
    (the audit's, a sweep's), so that a failed run leaves nothing behind."""
    import shutil

    if not run_dir.is_dir() or (run_dir / "manifest.json").exists():
        return
    shutil.rmtree(run_dir, ignore_errors=True)
    top = reports_dir.resolve()
    parent = run_dir.resolve().parent
    while parent != top and top in parent.parents:
        try:
            parent.rmdir()  # only when empty
        except OSError:
            break
        parent = parent.parent


__all__ = ["add_parser", "cmd_run", "junit_after_error"]
