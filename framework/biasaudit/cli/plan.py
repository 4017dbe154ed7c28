"""`biasaudit plan`: cells, request counts, coding calls, tokens and the estimated time
before any model call (runner/cost.py estimates them); a sweep or a suite as one row per
job; with --power, the stimuli each threshold needs (cli/power.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from biasaudit.cli.common import OVERRIDES_HELP, fail, gated_overrides, real_number, with_overrides
from biasaudit.errors import BiasAuditError, SpecError
from biasaudit.runner.sweeps import sweep_combinations

if TYPE_CHECKING:
    from biasaudit.runner.cost import JobEstimate
    from biasaudit.spec.suite import SuiteSpec


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    from biasaudit.cli.power import add_arguments as add_power_arguments

    pl = sub.add_parser("plan", help="show cells, request counts and a token estimate before any model call",
                        description="Count the plan (cells, stimuli, unique requests, cached requests, tokens) "
                                    "and estimate the time from throughput measured in earlier runs. With --power, "
                                    "also how many stimuli each threshold needs to reach a verdict, and what the "
                                    "current n can detect (docs/planning-an-audit.md).",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=OVERRIDES_HELP)
    pl.add_argument("--cells", action="store_true", help="list every cell of the design")
    pl.add_argument("-m", "--multirun", action="store_true",
                    help="count a sweep (`model=a,b metrics.0.alpha=0.6,0.7`): one row per job, and totals")
    pl.add_argument("--half-width", type=real_number("--half-width", lo=0, hi=0.5, lo_open=True, hi_open=True), default=None, metavar="H",
                    help="also print how many stimuli a 95%% half-width of H (e.g. 0.05) needs")
    pl.add_argument("--json", action="store_true",
                    help="print one job's plan as JSON: counts, tokens, cost, wall time, disk and memory")
    add_power_arguments(pl)
    pl.set_defaults(fn=cmd_plan)
    with_overrides(pl)
    return pl


# The smallest half-width asked about: 1e-4 already needs ~10^8 stimuli per cell; below
# it the count's search overflows a float (1e-300 ended in an OverflowError traceback).
_MIN_HALF_WIDTH = 1e-4


def _check_half_width(h: float | None) -> None:
    """`--half-width`: one error line for a value no sample size answers (nan, inf, 0,
    negative, 0.5 or more, or too small to count) instead of a traceback."""
    if h is not None and not _MIN_HALF_WIDTH <= h < 0.5:  # also false for nan
        raise SpecError(f"half-width {h:g} is not between {_MIN_HALF_WIDTH:g} and 0.5", key="--half-width",
                        hint="give e.g. 0.05 (a 95% interval of ±5 points)")


def cmd_plan(args: argparse.Namespace, rest: list[str]) -> int:
    from biasaudit.runner.cost import cost_text, estimate_jobs, footprint_rows, plan_json, time_text
    from biasaudit.spec.compose import compose_many
    from biasaudit.stats import sample_size_for_half_width, wilson_half_width

    try:
        from biasaudit.spec.suite import load_suite

        _check_half_width(args.half_width)
        gated = gated_overrides(rest, "plan")
        rest = list(gated.typed)
        found = load_suite(list(rest))
        if args.power and (found is not None or args.multirun):
            raise SpecError("--power plans one spec, not a suite or a sweep", key="--power",
                            hint="run `biasaudit plan --power` on each member spec (or each job's overrides)")
        if args.json and (found is not None or args.multirun or args.power):
            raise SpecError("--json plans one spec, not a suite, a sweep or --power", key="--json",
                            hint="run `biasaudit plan --json` on each job's overrides")
        if found is not None:
            return _plan_suite(found, list(rest))
        combos = sweep_combinations(list(gated)) if args.multirun else [list(gated)]
        labels = [" ".join(c) or "(defaults)" for c in combos]
        jobs = estimate_jobs(list(zip(labels, compose_many(combos), strict=True)))
    except BiasAuditError as exc:
        return fail(exc)
    if len(jobs) > 1:
        return _print_sweep_plan(jobs)
    job = jobs[0]
    if args.json:
        import json

        print(json.dumps(plan_json(job), indent=1))
        return 0
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
        ("estimated cost", cost_text(job)),
        *footprint_rows(job),
        ("headline rate ±95% (p=0.5)",
         f"±{100 * wilson_half_width(n_cell):.1f} points per cell (n={n_cell}), "
         f"±{100 * wilson_half_width(n_pooled):.1f} pooled (n={n_pooled}); Wilson"),
    ]
    if args.half_width is not None:
        need = sample_size_for_half_width(args.half_width)
        rows.append((f"stimuli for ±{args.half_width:g}", f"{need} per cell (p=0.5, Wilson 95%)"))
    rows += coding_rows(job)
    try:  # before anything is printed: a bad --power option is one error line, nothing else
        from biasaudit.cli.power import compute_power

        power = compute_power(job, args) if args.power else None
    except BiasAuditError as exc:
        return fail(exc)
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


def coding_rows(job: JobEstimate) -> list[tuple[str, str]]:
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


def _coding_cell(job: JobEstimate) -> tuple[str, int | None]:
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


def _plan_suite(found: tuple[SuiteSpec, Path], rest: list[str]) -> int:
    """A suite's plan: one row per member x subject, estimated like a sweep."""
    from biasaudit.runner.cost import estimate_jobs
    from biasaudit.runner.suite import plan_jobs
    from biasaudit.spec.compose import compose

    suite, path = found
    jobs = plan_jobs(suite, path, [ov for ov in rest if not ov.startswith("spec=")], False)
    print(f"suite {suite.name} ({path}): {len(suite.members)} member(s) x {len({j.subject for j in jobs})} subject(s)")
    return _print_sweep_plan(estimate_jobs([(f"{j.member_id} on {j.subject}", compose(j.overrides)) for j in jobs]))


def _print_sweep_plan(jobs: list[JobEstimate]) -> int:
    from biasaudit.runner.cost import fmt_duration, wall_time

    print(f"{'#':>3}  {'model':<28}{'items':>10}{'unique':>10}{'cached':>10}{'calls':>10}{'coding':>10}"
          f"{'in tok':>12}{'est. time':>12}  overrides")
    total_items = total_calls = total_tin = 0
    coding_total: int | None = 0
    low = high = 0.0
    unmeasured = 0
    for i, j in enumerate(jobs):
        shared = j.shares_with is not None
        calls = 0 if shared else j.needed
        w = j.wall
        # a job never measured shows the slow end of its backend's default range, marked *
        est = "shared" if shared else fmt_duration(w.high_s) + ("*" if j.needed and j.rate is None else "")
        coding, n_coding = _coding_cell(j)
        coding_total = None if coding_total is None or n_coding is None else coding_total + n_coding
        print(f"{i:>3}  {j.composed.config.model.name:<28}{j.model.items:>10}{j.model.unique:>10}"
              f"{j.model.cached:>10}{calls:>10}{coding:>10}{(0 if shared else j.model.input_tokens):>12}{est:>12}"
              f"  {j.label}")
        total_items += j.model.items
        if not shared:
            total_calls += calls
            total_tin += j.model.input_tokens
            unmeasured += 1 if j.needed and j.rate is None else 0
        if shared:  # its answers come from the cache the earlier job filled: only the engine's work
            w = wall_time(j.composed.config.model.backend, j.counts.kind, 0, j.model.items, [])
        low, high = low + w.low_s, high + w.high_s
    print(f"sweep: {len(jobs)} jobs, {total_items} plan items, {total_calls} model calls needed "
          f"(jobs with the same model share requests through the cache), ~{total_tin} input tokens (est.)")
    if any(j.coding for j in jobs):
        print("coding calls (judges, parsers, NLI checks, embeddings): "
              + ("some depend on the answers" if coding_total is None else f"at most {coding_total}")
              + "; `biasaudit plan` on one job shows them per layer")
    _print_sweep_cost(jobs)
    _print_sweep_footprint(jobs)
    note = (f"; * {unmeasured} job(s) at their backend's default throughput (estimate: default, not measured)"
            if unmeasured else "; from measured throughput")
    print(f"estimated time (jobs one after another): {fmt_duration(low)} to {fmt_duration(high)}{note}")
    return 0


def _print_sweep_footprint(jobs: list[JobEstimate]) -> None:
    """Disk of all the jobs' run folders and cache growth (jobs sharing requests add no
    cache), and the largest job's peak memory (jobs run one after another)."""
    from biasaudit.plan.footprint import fmt_bytes

    feet = [j.footprint for j in jobs]
    folders = sum(f.run_folder for f in feet)
    cache = sum(f.cache for j, f in zip(jobs, feet, strict=True) if j.shares_with is None)
    print(f"disk (est.): run folders {fmt_bytes(folders)}, cache growth {fmt_bytes(cache)}; "
          f"peak memory (est.) {fmt_bytes(max(f.peak_rss for f in feet))} (the largest job)")


def _print_sweep_cost(jobs: list[JobEstimate]) -> None:
    """Estimated cost per model and in total (per currency; no conversion), and plainly
    which models have no price. Jobs sharing another's requests add nothing."""
    from biasaudit.spec.model_configs import fmt_money

    per_model: dict[tuple[str, str], float] = {}
    unpriced: list[str] = []
    for j in jobs:
        name = j.composed.config.model.name
        if j.price is None:
            if name not in unpriced:
                unpriced.append(name)
            continue
        key = (name, j.price.currency)
        per_model[key] = per_model.get(key, 0.0) + (0.0 if j.shares_with is not None else j.cost or 0.0)
    if per_model:
        totals: dict[str, float] = {}
        for (_, cur), v in per_model.items():
            totals[cur] = totals.get(cur, 0.0) + v
        print("estimated cost: " + "; ".join(f"{n} ~{fmt_money(v, c)}" for (n, c), v in per_model.items())
              + "; total ~" + " + ".join(fmt_money(v, c) for c, v in totals.items()))
    for name in unpriced:
        print(f"no price given for {name} (set model.price to see its cost)")


__all__ = ["add_parser", "cmd_plan", "coding_rows"]
