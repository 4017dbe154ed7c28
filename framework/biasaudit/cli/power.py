"""`biasaudit plan --power`: the options and the printed power plan (runner/power.py computes it)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biasaudit.cli.common import real_number
from biasaudit.errors import SpecError
from biasaudit.stats.power import MAX_STIMULI

if TYPE_CHECKING:
    from biasaudit.runner.power import PowerRow


def add_arguments(pl: argparse.ArgumentParser) -> None:
    """The `--power` options of `biasaudit plan`."""
    g = pl.add_argument_group("power (--power)")
    g.add_argument("--power", action="store_true",
                   help="for each threshold: the stimuli needed to decide (PASS or FAIL, as the true value "
                        "calls for) with the target probability at the spec's alpha, and the deviations "
                        "detectable at the spec's current n (clustering over prompt conditions included)")
    g.add_argument("--target-power", type=real_number("--target-power", lo=0, hi=1, lo_open=True, hi_open=True), default=0.8, metavar="P",
                   help="probability of deciding to plan for (default 0.8)")
    g.add_argument("--true-value", action="append", default=[], metavar="[METRIC=]V",
                   help="the true value to plan for, on the estimate's scale (e.g. 55 for a score in [0, 100]); "
                        "`METRIC.ESTIMATE=V` (a threshold's `metric`) for one threshold; default: the pilot's estimate, else the "
                        "middle of a two-sided band")
    g.add_argument("--pilot", metavar="RUN_DIR", default=None,
                   help="an earlier run's folder: its intervals give the per-stimulus variance and the "
                        "intra-cluster correlation (default: conservative stated assumptions)")
    g.add_argument("--icc", type=real_number("--icc", lo=0, hi=1), default=None, metavar="RHO",
                   help="intra-cluster correlation of the rows of one stimulus (default: the pilot's, else 1, "
                        "the largest)")
    g.add_argument("--sd", type=real_number("--sd", lo=0, lo_open=True), default=None, metavar="S",
                   help="standard deviation of one row, for a mean with no declared range and no pilot")


def true_values(items: list[str]) -> dict[str, float]:
    """`--true-value` arguments: '' (every threshold) or a threshold's metric -> value."""
    out: dict[str, float] = {}
    for item in items:
        key, _, val = item.rpartition("=")
        try:
            v = float(val)
        except ValueError:
            raise SpecError(f"--true-value {item!r} is not a number", key="--true-value",
                            hint="give e.g. --true-value 55, or --true-value METRIC=55 with a threshold's metric") from None
        if not math.isfinite(v):
            raise SpecError(f"--true-value {item!r} is not finite", key="--true-value", hint="give a finite number")
        out[key] = v
    return out


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def compute_power(job: Any, args: argparse.Namespace) -> list[PowerRow]:
    """The power plan of a planned job (`biasaudit.runner.cost.JobEstimate`)."""
    from biasaudit.runner.power import plan_power

    cfg = job.composed.config
    vals = true_values(args.true_value)
    known = {t.metric for t in cfg.thresholds}
    for k in vals:
        if k and k not in known:
            raise SpecError(f"--true-value names {k!r}, which no threshold judges", key="--true-value",
                            hint=f"thresholds: {', '.join(sorted(known)) or 'none'}")
    return plan_power(cfg, job.counts, target=args.target_power, true_values=vals,
                      pilot=Path(args.pilot) if args.pilot else None, icc=args.icc, sd=args.sd)


def _pct(p: float) -> str:
    return "less than 1%" if 0 < p < 0.005 else "more than 99%" if 0.995 <= p < 1 else f"{p:.0%}"


def _a(pct: str) -> str:
    return f"an {pct}" if pct.startswith(("8", "11", "18")) else f"a {pct}"


def _allowed(r: PowerRow) -> str:
    if r.low is not None and r.high is not None:
        return f"within [{_num(r.low)}, {_num(r.high)}]"
    return f"at or above {_num(r.low)}" if r.low is not None else f"at or below {_num(r.high)}"


def plain_sentence(r: PowerRow, target: float) -> str | None:
    """The one sentence an auditor can act on, before the figures: whether the spec's
    stimuli can reach the verdict the true value calls for, and about how many stimuli
    reach it with the target probability (`needed`, from the same power machinery).
    "expected verdict PASS: P = 0.000" read as "expect PASS"; this says what it meant.
    None when the threshold was not planned (its note says why)."""
    if r.expected is None or r.power_now is None or r.true_value is None:
        return None
    where = " in every prompt condition" if r.over == "worst_cell" else ""
    metric = r.threshold
    if r.expected == "PASS":
        what = (f"that {metric} lies {_allowed(r)}{where} (equivalence)" if r.equivalence
                else f"that {metric} stays {_allowed(r)}{where}")
        verdict = "a PASS"
    else:
        what = f"that {metric} is not {_allowed(r)}{where}"
        verdict = "a FAIL"
    goal = f"{target:.0%}"
    chance = "no" if r.power_now == 0 else _a(_pct(r.power_now))  # exact power is 0 when no count can decide
    odds = f"if its true value is {_num(r.true_value)}, {verdict} has {chance} chance"
    if r.needed is None:
        more = f"even {MAX_STIMULI:,} stimuli would not give {_a(goal)} chance"
    else:
        more = f"about {r.needed:,} stimuli are needed for {_a(goal)} chance"
    if r.power_now >= target:
        return f"With {r.stimuli} stimuli you can expect to show {what}: {odds}."
    return f"With {r.stimuli} stimuli you cannot count on showing {what}: {odds}; {more}."


def print_power(rows: list[PowerRow], args: argparse.Namespace) -> None:
    """Print a power plan under the plan's table."""
    print()
    if not rows:
        print("power: the spec states no thresholds; nothing to plan")
        return
    alpha = 0.05
    print(f"power (target {args.target_power:g}, alpha {alpha:g}: bounds judged on the 95% interval, "
          f"equivalence PASS on the 90% one)")
    for r in rows:
        band = f"equivalence [{_num(r.low)}, {_num(r.high)}]" if r.equivalence else \
            " and ".join(x for x in (f">= {_num(r.low)}" if r.low is not None else "",
                                     f"<= {_num(r.high)}" if r.high is not None else "") if x)
        print(f"  {r.threshold} ({r.over}) {band}")
        lead = plain_sentence(r, args.target_power)
        if lead:
            print(f"    {lead}")
        print(f"    stimuli now        {r.stimuli} (m = {r.rows_per_stimulus:g} rows per stimulus)")
        if r.noise:
            print(f"    noise              {r.noise}")
        if r.true_value is not None:
            print(f"    true value         {_num(r.true_value)} ({r.true_source})")
        if r.expected is not None:
            # the verdict the true value calls for, not a forecast of the run's verdict
            print(f"    right verdict      {r.expected} for the true value; P({r.expected}) = {r.power_now:.3f} "
                  f"at n = {r.stimuli}")
            need = f"{r.needed}" if r.needed is not None else f"more than {MAX_STIMULI:,} (unreachable)"
            print(f"    stimuli needed     {need} for P({r.expected}) >= {args.target_power:g}")
        if r.mde is not None:
            for side, d in r.mde.fail_beyond.items():
                bound = r.high if side == "high" else r.low
                what = "above" if side == "high" else "below"
                print(f"    detectable FAIL    true value {what} {_num(bound)} by >= {_num(d)}" if d is not None
                      else f"    detectable FAIL    not within the estimate's range at n = {r.stimuli}")
            claim = "equivalence shown" if r.equivalence else "PASS"
            print("    detectable PASS    "
                  + (f"{claim} when the true value is >= {_num(r.mde.pass_inside)} inside every bound"
                     if r.mde.pass_inside is not None else f"{claim} not reachable at n = {r.stimuli}"))
        if r.note:
            print(f"    note               {r.note}")
