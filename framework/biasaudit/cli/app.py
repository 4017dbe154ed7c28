"""The `biasaudit` command: run, validate, plan, report, compare, list, init, schema..."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biasaudit._util.envdefaults import apply as apply_env_defaults
from biasaudit.errors import USER_ERRORS, BiasAuditError, SpecError, user_error

if TYPE_CHECKING:
    from biasaudit.runner.jobs import AuditJob
from biasaudit.runner.sweeps import sweep_combinations

apply_env_defaults()

OVERRIDES_HELP = """overrides are Hydra's: `key=value` for any config key, `group=option` to pick a
config group option. A spec file may also be given without `spec=` (`audit.yaml` is
`spec=audit.yaml`). Examples:
  path/to/audit.yaml                   a spec (or suite) file, the same as spec=path/to/audit.yaml
  spec=crows_pairs_tp                  a shipped spec (specs/<name>.yaml) or a path to a spec file
  model=smollm2                        the model under test (conf/model/)
  stimuli.source=/data/crows.csv       any spec key
  runtime.batch_size=16                run-time settings (conf/runtime/)
  runtime.sequential.look_every=50     look at the thresholds every 50 stimuli and stop once all are
                                       decided (alpha-spending; docs/statistics.md#sequential-stopping)
"""


def _fail(exc: BiasAuditError) -> int:
    from biasaudit._util.secrets import redact

    lines = exc.lines() if hasattr(exc, "lines") else [exc.one_line()]
    for line in lines:
        print(redact(line), file=sys.stderr)  # a server's text in an error may echo the API key
    return 2


def _print_traceback(exc: BaseException) -> None:
    """A traceback on stderr, scrubbed of the API keys (an exception's text may hold a
    server's answer)."""
    import traceback

    from biasaudit._util.secrets import redact

    print(redact("".join(traceback.format_exception(exc))), end="", file=sys.stderr)


EXIT_INTERNAL = 70  # EX_SOFTWARE (sysexits.h)


def _preflight(overrides: list[str], multirun: bool) -> list[AuditJob]:
    """Every job's spec, data, templates and model, checked before anything runs (a single
    run planned, the plan it then executes; a sweep's plans counted by streaming)."""
    from biasaudit.runner.jobs import prepare_jobs

    return prepare_jobs(sweep_combinations(overrides) if multirun else [overrides])


def _error_lines(exc: BiasAuditError) -> list[str]:
    return exc.lines() if hasattr(exc, "lines") else [exc.one_line()]


def _positional_spec(rest: list[str], command: str) -> list[str]:
    """`biasaudit validate path/to/spec.yaml`: a spec (or suite) file given without `spec=`
    becomes `spec=path/to/spec.yaml`. Any other argument that is not an override (no `=`,
    not a `~key` deletion) is a one-line error."""
    from biasaudit.spec.suite import spec_override

    loose = [a for a in rest if "=" not in a and not a.startswith("~")]
    if not loose:
        return rest
    hint = (f"give an existing spec file (biasaudit {command} path/to/spec.yaml), a shipped spec by name "
            f"(spec=crows_pairs_tp) or key=value overrides; see `biasaudit {command} --help`")
    for a in loose:
        path = Path(a).expanduser()
        if not path.is_file():
            what = "a folder, not a spec file" if path.is_dir() else "neither a spec file nor an override (key=value)"
            raise SpecError(f"{a!r} is {what}", hint=hint)
    if len(loose) > 1:
        raise SpecError(f"{len(loose)} spec files given ({', '.join(loose)}); a command takes one",
                        hint="run them one by one, or sweep them with -m spec=a.yaml,b.yaml")
    if spec_override(rest) is not None:
        raise SpecError(f"a spec file ({loose[0]}) and spec={spec_override(rest)} both given", key="spec",
                        hint="give the spec once")
    return [f"spec={a}" if a == loose[0] else a for a in rest]


def _junit_after_error(args: argparse.Namespace, line: str) -> None:
    """`run --junit PATH` stopped by a user error that `cmd_run` wrote no JUnit file for
    (an unknown flag, an error raised outside its checks): one errored test case."""
    if getattr(args, "command", None) != "run" or not getattr(args, "junit", None) or getattr(args, "junit_done", False):
        return
    from biasaudit.report.junit import write_junit_error

    args.junit_done = True
    try:
        write_junit_error(args.junit, line)
    except BiasAuditError as err:
        _fail(err)


def cmd_run(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.report.junit import check_junit_path, write_junit_error
    from biasaudit.spec.compose import prepare_overrides
    from biasaudit.verdicts.gating import gate_flags

    # the command as typed, for the manifest and the "how to resume" message
    typed = ["biasaudit", "run", *(["-m"] if args.multirun else []),
             *(["--retry-failed"] if args.retry_failed else []), *gate_flags(args), *rest]
    if args.junit:  # before anything runs: a bad path must not cost a run
        try:
            check_junit_path(args.junit)
        except BiasAuditError as exc:
            args.junit_done = True  # nowhere to write it
            return _fail(exc)

    def fail(exc: BiasAuditError | None, line: str | None = None) -> int:
        """A user error that stopped the command before its jobs ran: one line on stderr,
        and with --junit a file with one errored test case, so CI shows why."""
        lines = _error_lines(exc) if exc is not None else [line or "error"]
        if exc is not None:
            _fail(exc)
        else:
            print(lines[0], file=sys.stderr)
        if args.junit:
            args.junit_done = True
            more = f" (and {len(lines) - 1} more error(s))" if len(lines) > 1 else ""
            try:
                write_junit_error(args.junit, lines[0] + more)
            except BiasAuditError as err:
                _fail(err)
        return 2

    try:
        rest = _positional_spec(rest, "run")
        overrides = prepare_overrides(list(rest))
    except BiasAuditError as exc:
        return fail(exc)
    if args.retry_failed:
        overrides.append("runtime.retry_failed=true")
    try:
        from biasaudit.spec.suite import load_suite

        found = load_suite(list(rest))
        if found is not None:
            return _run_suite(found, list(rest), overrides, args, typed)
        jobs = _preflight(overrides, args.multirun)
    except BiasAuditError as exc:
        return fail(exc)
    except Exception as exc:  # Hydra's override grammar errors; the environment's (a full disk)
        err = user_error(exc) if isinstance(exc, USER_ERRORS) else None
        if err is not None:
            _log_traceback(exc)
            return fail(err)
        if type(exc).__module__.startswith(("hydra", "omegaconf")):
            return fail(None, f"error: overrides: {str(exc).splitlines()[0]} (hint: see `biasaudit run --help`)")
        raise
    from biasaudit.runner.sweep_caches import merge_job_caches, plan_job_caches

    try:
        caches = plan_job_caches(jobs[0].composed) if args.multirun else None
    except BiasAuditError as exc:
        return fail(exc)
    if caches is not None:
        overrides = [*overrides, f"runtime.job_cache_dir={caches[1]}"]
    code = _hydra_run(overrides, args, typed, jobs)
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


def _run_suite(found: Any, raw: list[str], overrides: list[str], args: argparse.Namespace,
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


def _hydra_run(overrides: list[str], args: argparse.Namespace, command: list[str], jobs: list[AuditJob]) -> int:
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import DictConfig

    from biasaudit._util.paths import conf_dir
    from biasaudit.cli.run_end import end_jobs
    from biasaudit.records.jobs import JobOutcome
    from biasaudit.report.outcome import final_line
    from biasaudit.runner.jobs import run_job
    from biasaudit.runner.sweep_caches import job_runtime
    from biasaudit.spec.compose import record_hydra_overrides, to_audit_config
    from biasaudit.verdicts.gating import Ledger

    # Launchers such as joblib run jobs in other processes: every job appends its outcome
    # to a ledger file named in the environment they inherit.
    ledger = Ledger()

    @hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")
    def task(cfg: DictConfig) -> Any:
        hc = HydraConfig.get()
        choices = {k: str(v) for k, v in hc.runtime.choices.items() if v is not None}
        run_dir = Path(hc.runtime.output_dir)
        job = JobOutcome(job=hc.job.num if args.multirun else 0, overrides=list(hc.overrides.task))
        try:
            # a single run was composed and planned before Hydra started: that plan runs
            ready = jobs[0] if len(jobs) == 1 and not args.multirun else None
            if ready is not None:
                composed = ready.composed
            else:
                composed = to_audit_config(cfg, choices, list(hc.overrides.task))
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
                _print_traceback(exc)
                Ledger.record(JobOutcome(job=job.job, overrides=job.overrides,
                                         error=f"internal error: {type(exc).__name__}", internal=True))
                return None
            _log_traceback(exc)
            _remove_stub(run_dir, Path(str(cfg.runtime.reports_dir)))
            _fail(err)
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
    sys.argv = ["biasaudit", *(["--multirun"] if args.multirun else []), *overrides]
    try:
        task()
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


_VERBOSE = {"on": False}


def _log_traceback(exc: BaseException) -> None:
    """With -v, where a one-line error came from (to tell a bug from bad input)."""
    if _VERBOSE["on"]:
        _print_traceback(exc)


def cmd_validate(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.plan.stream import count_plans
    from biasaudit.runner.pipeline import plan_inputs
    from biasaudit.spec.compose import compose

    try:
        from biasaudit.runner.pipeline import prepare
        from biasaudit.runner.suite import plan_jobs
        from biasaudit.spec.suite import load_suite

        rest = _positional_spec(rest, "validate")
        found = load_suite(list(rest))
        if found is not None:
            suite, path = found
            jobs = plan_jobs(suite, path, [ov for ov in rest if not ov.startswith("spec=")], False)
            for job in jobs:
                prepare(compose(job.overrides))
            print(f"ok: suite {path}: {len(suite.members)} member(s) x {len({j.subject for j in jobs})} subject(s), "
                  f"{len(jobs)} run(s) validated")
            return 0
        c = compose(list(rest))
        inp = plan_inputs(c)
        counts = count_plans(c.config, inp.stimuli, [inp.identity], str(c.spec_file))  # renders every request
    except BiasAuditError as exc:
        return _fail(exc)
    layers = f"{len(inp.coding.layers)} coding layer(s){' (defaults)' if inp.coding.defaults else ''}, "
    print(f"ok: {c.spec_file}: {len(counts.cells)} cell(s), {len(inp.stimuli.stimuli)} stimuli, "
          f"{counts.unique} requests, {layers}{len(c.config.metrics)} metric(s), "
          f"{len(c.config.thresholds)} threshold(s)")
    return 0


def cmd_selftest(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.selftest import lines, selftests

    try:
        results = selftests(_positional_spec(rest, "selftest"))
    except BiasAuditError as exc:
        return _fail(exc)
    failed = 0
    for name, res in results:
        print(f"self-test of {name + ': ' if name else ''}{res.spec} (oracle responders, no model)")
        for line in lines(res):
            print("  " + line)
        verdict = "PASSED" if res.passed else "FAILED"
        print(f"  self-test {verdict}: planted bias {'detected' if res.detected else 'NOT detected'}, "
              f"{sum(r.ok for r in res.rows)}/{len(res.rows)} rows as expected")
        failed += not res.passed
    return 1 if failed else 0


def cmd_plan(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.cost import estimate_jobs, time_text
    from biasaudit.spec.compose import compose_many, prepare_overrides
    from biasaudit.stats import sample_size_for_half_width, wilson_half_width

    try:
        from biasaudit.spec.suite import load_suite

        rest = _positional_spec(rest, "plan")
        found = load_suite(list(rest))
        if args.power and (found is not None or args.multirun):
            raise SpecError("--power plans one spec, not a suite or a sweep", key="--power",
                            hint="run `biasaudit plan --power` on each member spec (or each job's overrides)")
        if found is not None:
            return _plan_suite(found, list(rest))
        overrides = prepare_overrides(list(rest))
        combos = sweep_combinations(overrides) if args.multirun else [overrides]
        labels = [" ".join(c) or "(defaults)" for c in combos]
        jobs = estimate_jobs(list(zip(labels, compose_many(combos), strict=True)))
    except BiasAuditError as exc:
        return _fail(exc)
    if len(jobs) > 1:
        return _print_sweep_plan(jobs)
    job = jobs[0]
    cfg = job.composed.config
    counts, m = job.counts, job.model
    n_cell = counts.per_cell_n
    n_pooled = counts.units
    rows = [
        ("spec", str(job.composed.spec_file)),
        ("model", f"{cfg.model.name} ({cfg.model.backend})"),
        ("probe", counts.kind),
        ("cells", str(len(counts.cells))),
        ("plan items", str(m.items)),
        ("subject requests", str(m.unique)),
        ("already cached", str(m.cached)),
        ("subject calls needed", str(job.needed)),
        ("input tokens (est.)", f"~{m.input_tokens}"),
        ("output tokens (max)", str(m.output_tokens)),
        ("estimated time", time_text(job)),
        ("headline rate ±95% (p=0.5)",
         f"±{100 * wilson_half_width(n_cell):.1f} points per cell (n={n_cell}), "
         f"±{100 * wilson_half_width(n_pooled):.1f} pooled (n={n_pooled}); Wilson"),
    ]
    if args.half_width:
        need = sample_size_for_half_width(args.half_width)
        rows.append((f"stimuli for ±{args.half_width:g}", f"{need} per cell (p=0.5, Wilson 95%)"))
    rows += coding_rows(job)
    try:  # before anything is printed: a bad --power option is one error line, nothing else
        from biasaudit.cli.power import compute_power

        power = compute_power(job, args) if args.power else None
    except BiasAuditError as exc:
        return _fail(exc)
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    if args.cells:
        for c in counts.cells:
            print(f"  cell {c.id}")
    if power is not None:
        from biasaudit.cli.power import print_power

        print_power(power, args)
    return 0


def coding_rows(job: Any) -> list[tuple[str, str]]:
    """The coding calls of a job, per layer, apart from the subject calls."""
    if not job.coding:
        return [("coding calls", "none (no coding layers)")]
    how = "exact, from the cached responses" if job.coding_exact else "before any response: bounds per layer"
    out = [("coding calls", how)]
    total: int | None = 0
    tokens = 0
    for e in job.coding:
        if e.calls is None:
            text = f"unknown ({e.note})" if e.note else "unknown"
            total = None
        elif job.coding_exact:
            text = f"{e.calls} requests, {e.cached} cached, {e.needed} calls needed"
            total = None if total is None else total + (e.needed or 0)
        else:
            text = f"{'' if e.bound == 'exact' else e.bound + ' '}{e.calls}" + (f" ({e.note})" if e.note else "")
            total = None if total is None else total + e.calls
        tokens += e.input_tokens
        out.append((f"  {e.layer} ({e.coder})", text))
    needed = "depends on the responses" if total is None else (str(total) if job.coding_exact else f"at most {total}")
    out.append(("coding calls needed", needed))
    if tokens and not job.coding_exact:
        out.append(("coding input tokens (est.)", f"~{tokens}"))
    return out


def _coding_cell(job: Any) -> tuple[str, int | None]:
    """A sweep row's coding calls: exact when cached responses allow it, else a bound."""
    if not job.coding:
        return "0", 0
    if any(e.calls is None for e in job.coding):
        return "?", None
    if job.coding_exact:
        n = sum(e.needed or 0 for e in job.coding)
        return str(n), n
    n = sum(e.calls or 0 for e in job.coding)
    return f"<={n}", n


def _plan_suite(found: Any, rest: list[str]) -> int:
    """A suite's plan: one row per member x subject, estimated like a sweep."""
    from biasaudit.runner.cost import estimate_jobs
    from biasaudit.runner.suite import plan_jobs
    from biasaudit.spec.compose import compose

    suite, path = found
    jobs = plan_jobs(suite, path, [ov for ov in rest if not ov.startswith("spec=")], False)
    print(f"suite {suite.name} ({path}): {len(suite.members)} member(s) x {len({j.subject for j in jobs})} subject(s)")
    return _print_sweep_plan(estimate_jobs([(f"{j.member_id} on {j.subject}", compose(j.overrides)) for j in jobs]))


def _print_sweep_plan(jobs: list[Any]) -> int:
    from biasaudit.runner.cost import fmt_duration

    print(f"{'#':>3}  {'model':<28}{'items':>10}{'unique':>10}{'cached':>10}{'calls':>10}{'coding':>10}"
          f"{'in tok':>12}{'est. time':>12}  overrides")
    total_items = total_calls = total_tin = 0
    coding_total: int | None = 0
    total_s = 0.0
    unmeasured = 0
    for i, j in enumerate(jobs):
        shared = j.shares_with is not None
        calls = 0 if shared else j.needed
        est = "shared" if shared else ("n/a" if j.needed and j.rate is None else fmt_duration(j.seconds or 0.0))
        coding, n_coding = _coding_cell(j)
        coding_total = None if coding_total is None or n_coding is None else coding_total + n_coding
        print(f"{i:>3}  {j.composed.config.model.name:<28}{j.model.items:>10}{j.model.unique:>10}"
              f"{j.model.cached:>10}{calls:>10}{coding:>10}{(0 if shared else j.model.input_tokens):>12}{est:>12}"
              f"  {j.label}")
        total_items += j.model.items
        if not shared:
            total_calls += calls
            total_tin += j.model.input_tokens
            if j.needed and j.rate is None:
                unmeasured += 1
            else:
                total_s += j.seconds or 0.0
    print(f"sweep: {len(jobs)} jobs, {total_items} plan items, {total_calls} model calls needed "
          f"(jobs with the same model share requests through the cache), ~{total_tin} input tokens (est.)")
    if any(j.coding for j in jobs):
        print("coding calls (judges, parsers, NLI checks, embeddings): "
              + ("some depend on the answers" if coding_total is None else f"at most {coding_total}")
              + "; `biasaudit plan` on one job shows them per layer")
    if unmeasured == len([j for j in jobs if j.shares_with is None and j.needed]) and unmeasured:
        print("estimated time: no measurement yet (run a job once to measure each model's throughput)")
    else:
        note = f"; plus {unmeasured} job(s) with no measurement yet" if unmeasured else ""
        print(f"estimated time (jobs one after another, from measured throughput): ~{fmt_duration(total_s)}{note}")
    return 0


def cmd_report(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.pipeline import rerender

    if rest:
        print(f"error: unexpected arguments {rest} (hint: see `biasaudit {args.command} --help`)", file=sys.stderr)
        return 2
    try:
        summary = rerender(Path(args.run_dir))
    except BiasAuditError as exc:
        return _fail(exc)
    print(f"{summary.audit.name}: overall {summary.overall} (re-rendered from the store, 0 model calls)")
    print(f"report: {Path(args.run_dir) / 'report.html'}")
    return 0


def cmd_compare(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit._util.fileio import check_output_dir
    from biasaudit.comparison.runs import compare
    from biasaudit.report import render_compare
    from biasaudit.runner.pipeline import _write

    paths = [Path(p) for p in [*args.paths, *rest]]
    out = Path(args.out) if args.out else (paths[0] if paths[0].is_dir() else paths[0].parent) / "compare"
    notes: list[str] = []
    try:  # the output folder before any work (a file, a device or a read-only place is one line)
        check_output_dir(out, key="--out" if args.out else "compare", what="compare output folder")
        result = compare(paths, notes, max_paired_runs=args.max_paired_runs)
    except BiasAuditError as exc:
        return _fail(exc)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    render_compare(out, result, write=_write)
    from biasaudit.comparison.paired import lines

    for line in lines(result):
        print(line)
    extra = "".join(f"; {a.title}" for a in result.analyses.values())
    print(f"compared {len(result.runs)} runs{extra}")
    print(f"report: {out / 'compare.html'}")
    return 0


def cmd_calibrate(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.calibrate import calibrate
    from biasaudit.spec.compose import compose

    try:
        composed = compose(_positional_spec(rest, "calibrate"))
        results = calibrate(composed, args.layer)
    except BiasAuditError as exc:
        return _fail(exc)
    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    failed = False
    for result in results:
        blank = f"; {result['unlabelled']} rows without a gold label left out" if result.get("unlabelled") else ""
        print(f"layer {result['layer']}: control set {result['control_set']} ({result['n']} labelled responses{blank})")
        print(f"{'rater':<18}{'accuracy':>10}  {'95% CI':<16}{'chance':>8}{'kappa':>8}  {'95% CI':<18}verdict")
        for r in result["raters"]:
            verdict = "better than chance" if r["better_than_chance"] else "NOT better than chance"
            print(f"{r['rater']:<18}{r['accuracy']:>10.3f}  [{r['ci_low']:.3f}, {r['ci_high']:.3f}]  "
                  f"{num(r['chance']):>8}{num(r['kappa']):>8}  [{num(r['kappa_low'])}, {num(r['kappa_high'])}]"
                  f"{'':<2}{verdict}")
            conf = r.get("confusion") or {}
            if conf.get("matrix"):
                rows = "; ".join(f"{g}: {' '.join(str(x) for x in row)}" for g, row in zip(conf["labels"],
                                                                                       conf["matrix"], strict=True))
                print(f"{'':<18}confusion (rows: gold, columns: rater; order {'/'.join(conf['labels'])}): {rows}")
        if not result["passed"]:
            failed = True
            print(f"layer {result['layer']}: its coder is NOT better than chance (kappa's 95% lower bound <= 0); "
                  "runs that use it report the verdicts it feeds as INCONCLUSIVE")
    print("chance = accuracy of always giving the most common gold label; better than chance = kappa's 95% "
          "interval above 0 (bootstrap over the control rows). Stored in the cache for later runs.")
    del failed  # a finding, not an error: the exit code stays 0 (the flag is stored for runs)
    return 0


def cmd_merge_cache(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.sweep_caches import merge_sources
    from biasaudit.store import Store

    if rest:
        print(f"error: unexpected arguments {rest} (hint: see `biasaudit {args.command} --help`)", file=sys.stderr)
        return 2
    try:
        into = Path(args.into)
        # every source checked before the target is created or touched
        sources = merge_sources(into, [Path(p) for p in args.sources])
        for src in sources:
            Store(src, readonly=True).close()
        store = Store(into)
    except BiasAuditError as exc:
        return _fail(exc)
    try:
        for src in sources:
            added = store.merge_from(src)
            print(f"{src}: {added} new responses")
        print(f"{args.into}: {store.count()} responses")
    except BiasAuditError as exc:
        return _fail(exc)
    finally:
        store.close()
    return 0


def cmd_schema(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.spec.schema import json_schema, schema_text

    if rest:
        print(f"error: unexpected arguments {rest} (hint: see `biasaudit schema --help`)", file=sys.stderr)
        return 2
    print(schema_text(json_schema(args.kind)), end="")
    return 0


def cmd_list(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.cli.catalog import render

    if rest:
        print(f"error: unexpected arguments {rest}", file=sys.stderr)
        return 2
    for line in render(args.what):
        print(line)
    return 0


def _with_overrides(sp: argparse.ArgumentParser) -> None:
    """Show `[overrides...]` in the usage line: they are not argparse arguments (Hydra
    parses them), so argparse would leave them out."""
    usage = sp.format_usage().removeprefix("usage: ").strip()
    sp.usage = " ".join(usage.split()) + " [SPEC_FILE] [overrides...]"


def build_parser() -> argparse.ArgumentParser:
    from biasaudit._version import __version__
    from biasaudit.cli.catalog import CATALOGS
    from biasaudit.verdicts.gating import add_gate_args

    p = argparse.ArgumentParser(
        prog="biasaudit",
        description="Audit language models for social bias with declarative YAML specs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `biasaudit <command> --help` for a command's options. Exit codes: 0 all thresholds "
               "PASS, 1 any FAIL, 3 INCONCLUSIVE only, 4 could not measure (more than "
               "validity.max_failed_share of the model requests failed), 2 user error, 130 interrupted.",
    )
    p.add_argument("--version", action="version", version=f"biasaudit {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log more detail")
    sub = p.add_subparsers(dest="command", metavar="command")
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
    v = sub.add_parser("validate", help="check a spec and its data without calling any model",
                       description="Compose and validate the spec, load its data and render every request; "
                                   "no model is loaded or called. The spec file may be given as is "
                                   "(`biasaudit validate path/to/spec.yaml`) or as spec=... . "
                                   "Exit code 0 when valid, 2 otherwise.",
                       formatter_class=fmt, epilog=OVERRIDES_HELP)
    v.set_defaults(fn=cmd_validate)
    st = sub.add_parser("selftest", help="check that a spec detects a planted bias and stays quiet on a null one",
                        description="Run the spec against oracle responders built from its own data, with no model: "
                                    "planted bias (always the stereotyped side), null (each side for half of the "
                                    "stimuli), refuse-all and all-ties. Prints oracle x threshold: expected verdict, "
                                    "verdict, ok. Exit code 0 when every row is as expected and the planted bias "
                                    "is detected, 1 when not, 2 on bad input.",
                        formatter_class=fmt, epilog=OVERRIDES_HELP)
    st.set_defaults(fn=cmd_selftest)
    pl = sub.add_parser("plan", help="show cells, request counts and a token estimate before any model call",
                        description="Count the plan (cells, stimuli, unique requests, cached requests, tokens) "
                                    "and estimate the time from throughput measured in earlier runs. With --power, "
                                    "also how many stimuli each threshold needs to reach a verdict, and what the "
                                    "current n can detect (docs/planning-an-audit.md).",
                        formatter_class=fmt, epilog=OVERRIDES_HELP)
    pl.add_argument("--cells", action="store_true", help="list every cell of the design")
    pl.add_argument("-m", "--multirun", action="store_true",
                    help="count a sweep (`model=a,b metrics.0.alpha=0.6,0.7`): one row per job, and totals")
    pl.add_argument("--half-width", type=float, default=None, metavar="H",
                    help="also print how many stimuli a 95%% half-width of H (e.g. 0.05) needs")
    from biasaudit.cli.power import add_arguments as add_power_arguments

    add_power_arguments(pl)
    pl.set_defaults(fn=cmd_plan)
    rp = sub.add_parser("report", help="re-render a run's report from the store (no model calls)",
                        description="Rebuild a finished run's reports from its manifest.json and the cache: "
                                    "measures, judges and renders again, with no model call.")
    rp.add_argument("run_dir", help="a run folder, e.g. reports/crows-pairs-tp/20261122-101500-000000")
    rp.set_defaults(fn=cmd_report)
    cp = sub.add_parser("compare", help="compare runs: side-by-side estimates, TP vs NLI fits, R² heatmap, MI ranking",
                        description="Compare finished runs (a sweep folder, a suite folder or run folders): "
                                    "headline estimates side by side, differences with intervals, the "
                                    "TP-versus-NLI analysis and sweep stability. Writes compare/compare.html.")
    cp.add_argument("paths", nargs="+", help="sweep folders or run folders")
    cp.add_argument("--out", default=None, help="output folder (default: <first path>/compare)")
    cp.add_argument("--max-paired-runs", type=int, default=50, metavar="N",
                    help="paired tests compare every pair of runs of a metric (N runs: N(N-1)/2 tests); a metric "
                         "with more runs gets its ranking but no paired tests (default: 50)")
    cp.set_defaults(fn=cmd_compare)
    cb = sub.add_parser("calibrate", help="code a layer's labelled control set: accuracy and kappa (per judge for panels)",
                        description="Code the control set (responses with known labels) of every coding layer with "
                                    "a `calibration` section, and report the accuracy (Wilson 95% interval) and "
                                    "Cohen's kappa against the gold labels, with the confusion matrix: the layer's, and each "
                                    "judge's for a panel. A filled annotation sheet (`biasaudit annotate export`, "
                                    "labelled by people) is a control set too: calibration: {source: <sheet>.csv, "
                                    "text: answer, gold: label}; its blank labels are left out.",
                        formatter_class=fmt, epilog=OVERRIDES_HELP)
    cb.add_argument("--layer", default=None, help="the coding layer (default: every layer with a `calibration` section)")
    cb.set_defaults(fn=cmd_calibrate)
    mc = sub.add_parser("merge-cache", help="merge per-job cache files into one (cluster sweeps without a shared cache)",
                        description="Copy the responses and throughput records of per-job cache files into one "
                                    "cache; a stored answer is never replaced by a failure.")
    mc.add_argument("into", help="the cache to merge into (created if missing)")
    mc.add_argument("sources", nargs="+", help="cache files to merge from; kept unchanged")
    mc.set_defaults(fn=cmd_merge_cache)
    sc = sub.add_parser("schema", help="print the JSON Schema of a spec file, a suite file or the run config",
                        description="Print a JSON Schema (draft 2020-12) to standard output: of a spec file "
                                    "(the default; for editors, as docs/schema/spec.schema.json), of a suite "
                                    "file, or of the composed run configuration (spec plus the operator's "
                                    "model, judge, nli, embedder and runtime groups).")
    sc.add_argument("kind", nargs="?", choices=["spec", "suite", "config"], default="spec",
                    help="spec (default), suite or config")
    sc.set_defaults(fn=cmd_schema)
    ls = sub.add_parser("list", help="list specs, models, metrics... with one-line descriptions",
                        description="List the names a spec or an override can use, each with a one-line "
                                    "description:\n" + "\n".join(f"  {k:<10} {d}" for k, (d, _) in CATALOGS.items()),
                        formatter_class=fmt)
    ls.add_argument("what", choices=list(CATALOGS), help="what to list")
    ls.set_defaults(fn=cmd_list)
    from biasaudit.cli.init import add_parser as add_init

    add_init(sub)
    from biasaudit.cli.annotate import add_parser as annotate_parser
    from biasaudit.cli.view import add_parser as add_view

    annotate_parser(sub)
    add_view(sub)
    for sp in (r, v, pl, cb):
        _with_overrides(sp)
    from biasaudit.cli.pack import add_parser as add_pack
    from biasaudit.cli.verify import add_parser as add_verify

    add_pack(sub)
    add_verify(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    _VERBOSE["on"] = bool(args.verbose)
    if args.command is None:
        parser.print_help()
        return 0
    unknown_flags = [a for a in rest if a.startswith("-")]
    if unknown_flags:
        msg = f"unrecognized arguments: {' '.join(unknown_flags)}"
        _junit_after_error(args, f"error: {msg} (hint: see `biasaudit {args.command} --help`)")
        parser.error(msg)
    from biasaudit._util.secrets import guard_logging

    guard_logging()
    if args.command in ("run", "report"):
        from biasaudit._util.progress import show

        show()  # stage messages on stderr
    from biasaudit._util.paths import spec_lookup_scope

    try:
        with spec_lookup_scope():  # specs given as paths are this command's only
            return int(args.fn(args, rest))
    except KeyboardInterrupt:  # outside a run (a run says how to resume itself)
        print("interrupted", file=sys.stderr)
        return 130
    except (BiasAuditError, *USER_ERRORS) as exc:
        _log_traceback(exc)
        err = user_error(exc)
        assert err is not None
        code = _fail(err)
        _junit_after_error(args, err.one_line())
        return code
    except Exception as exc:
        import sqlite3

        if isinstance(exc, sqlite3.Error):
            _log_traceback(exc)
            return _fail(user_error(exc))  # type: ignore[arg-type]
        # a bug in biasaudit: the traceback says where, and the exit code sets it apart
        # from verdicts (0, 1, 3), runs that could not measure (4), user errors (2) and interrupts (130)
        _print_traceback(exc)
        print("error: internal error in biasaudit (a bug: the traceback above says where; please report it)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
