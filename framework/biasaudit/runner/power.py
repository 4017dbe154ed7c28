"""`biasaudit plan --power`: for each threshold of a spec, the stimuli a decision needs and
the deviations detectable at the spec's current n (stats/power.py does the statistics).

What the noise of each estimate is taken to be, in order:

1. a pilot run (`--pilot RUN_DIR`, its summary.json): the same estimate's interval gives
   its standard error by the estimate's own method (Wilson: the effective n that
   interval was made on, found by inverting it; t and the cluster-robust `cluster-t`: the
   half-width over the t quantile on n - 1 or stimuli - 1 degrees of freedom; a
   bootstrap: over the normal quantile, the large-sample relation). A share's effective n
   gives its design effect and so the intra-cluster correlation over the pilot's rows per
   stimulus, ICC = (deff - 1) / (m - 1); a mean's per-stimulus standard deviation is taken
   as it is (it holds the pilot's clustering; a design with fewer rows per stimulus than
   the pilot gets it scaled up by m_pilot / m, the bound for any ICC >= 0).
2. stated defaults: a share (an estimate with a declared range) at p = 0.5 on its range,
   the largest variance any value on that range can have; ICC = 1 (`--icc` to change),
   the largest design effect, m: every row of a stimulus counts once. A mean with no
   declared range has no safe default: `--sd` (the standard deviation of one row) or a
   pilot is needed.

The true value a verdict is planned for: `--true-value`, else the pilot's estimate, else
the middle of a two-sided band; a one-sided bound needs one of the first two.
"""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from pathlib import Path

from biasaudit.errors import DataError, SpecError
from biasaudit.plan.compile import request_params
from biasaudit.plan.stream import PlanCounts
from biasaudit.records.estimate import Estimate
from biasaudit.records.summary import RunSummary
from biasaudit.registry import METRICS
from biasaudit.spec import AuditConfig, ThresholdSpec
from biasaudit.stats.power import (
    Detectable,
    Dispersion,
    Rule,
    design_factor,
    detectable,
    p_decide,
    share_needed,
    stimuli_needed,
)
from biasaudit.stats.proportions import wilson_score

DEFAULT_ICC = 1.0
"""The intra-cluster correlation assumed with no pilot: the largest, so the plan is never
optimistic about what the prompt conditions of one stimulus add."""
DEFAULT_LEVEL = 0.95
SUMMARY_LIMIT = 256 * 1024 * 1024


@dataclass(frozen=True)
class PowerRow:
    """The power plan of one threshold."""

    threshold: str
    over: str
    equivalence: bool
    low: float | None
    high: float | None
    stimuli: int
    """Stimuli of the spec as it is (after sampling)."""
    rows_per_stimulus: float
    """m: rows a stimulus gives to the estimate (prompt conditions x variants x samples)."""
    kind: str = ""
    """'proportion' or 'mean' ('' when not planned)."""
    true_value: float | None = None
    true_source: str = ""
    noise: str = ""
    """What the standard error rests on, in words (pilot or defaults, ICC, design effect)."""
    expected: str | None = None
    """The verdict the true value should get (PASS / FAIL)."""
    power_now: float | None = None
    needed: int | None = None
    """Stimuli for the expected verdict with the target probability (None: unreachable)."""
    mde: Detectable | None = None
    icc: float | None = None
    """The intra-cluster correlation used (None for a mean planned from a pilot's per-stimulus SD)."""
    design_effect: float | None = None
    """1 + (m - 1) ICC, where an ICC was used."""
    note: str = ""


def plan_power(cfg: AuditConfig, counts: PlanCounts, *, target: float = 0.8,
               true_values: dict[str, float] | None = None, pilot: Path | None = None,
               icc: float | None = None, sd: float | None = None) -> list[PowerRow]:
    """The power plan of every threshold of `cfg` (see the module text). `true_values`:
    threshold metric reference ('' for all) -> the true value to plan for."""
    if not 0 < target < 1:
        raise SpecError(f"target power {target:g} is not between 0 and 1", key="--target-power",
                        hint="give e.g. 0.8")
    if icc is not None and not 0 <= icc <= 1:
        raise SpecError(f"ICC {icc:g} is not between 0 and 1", key="--icc", hint="give e.g. 0.2")
    if sd is not None and not (sd > 0 and math.isfinite(sd)):
        raise SpecError(f"standard deviation {sd:g} is not positive", key="--sd", hint="give e.g. 1.5")
    summary = _read_pilot(pilot) if pilot is not None else None
    _, n_samples = request_params(cfg)
    stimuli = max(1, counts.per_cell_n // max(1, n_samples))
    m = counts.units / stimuli
    m_cell = m / max(1, len(counts.cells))
    names = {mm.key: mm.name for mm in cfg.metrics}
    return [_row(t, names, stimuli, m_cell if t.over == "worst_cell" else m, target, true_values or {}, summary,
                 icc, sd, len(counts.cells)) for t in cfg.thresholds]


def _read_pilot(run_dir: Path) -> RunSummary:
    from biasaudit._util.fileio import read_capped

    path = run_dir / "summary.json"
    if not path.is_file():
        raise DataError("no summary.json: not a finished run folder", file=str(run_dir), key="--pilot",
                        hint="give the folder of an earlier run (the one holding report.html and summary.json)")
    try:
        data = read_capped(path, SUMMARY_LIMIT, key="--pilot", what="pilot summary")
        return RunSummary.read_raw(json.loads(data), file=str(path))
    except ValueError as exc:
        raise DataError(f"the pilot's summary.json is not a run summary ({str(exc).splitlines()[0]})",
                        file=str(path), key="--pilot", hint="give a single run's folder, not a suite's") from None


def _range(metric_name: str, est_name: str) -> tuple[float, float] | None:
    if metric_name not in METRICS:
        return None
    for pat, rng in METRICS.get(metric_name).bounds:
        if (est_name == "") if pat == "" else fnmatch.fnmatchcase(est_name, pat):
            return rng
    return None


def _row(t: ThresholdSpec, names: dict[str, str], stimuli: int, m: float, target: float,
         true_values: dict[str, float], summary: RunSummary | None, icc: float | None,
         sd: float | None, cells: int) -> PowerRow:
    low, high = t.band
    base = PowerRow(threshold=t.metric, over=t.over, equivalence=t.equivalence is not None, low=low, high=high,
                    stimuli=stimuli, rows_per_stimulus=m)
    if t.over == "spread":
        return _replace(base, note="not planned: the spread of cell values has no closed-form power; "
                                   "run a pilot and read its interval")
    mid, _, est_name = t.metric.partition(".")
    rng = _range(names[mid], est_name)
    pilot_est = _pilot_estimate(summary, mid, est_name, t.over) if summary is not None else None
    if summary is not None and pilot_est is None:
        return _replace(base, note=f"the pilot has no estimate {t.metric!r} with an interval")
    disp, noise, rho = _dispersion(pilot_est, rng, m, icc, sd)
    base = _replace(base, icc=rho, design_effect=None if rho is None else 1 + (m - 1) * rho)
    if disp is None:
        return _replace(base, note=noise)
    value, source = _true_value(t, true_values, pilot_est, low, high)
    if value is None:
        return _replace(base, kind=disp.kind, noise=noise, note=source)
    if rng is not None and not rng[0] <= value <= rng[1]:
        return _replace(base, kind=disp.kind, noise=noise, true_value=value, true_source=source,
                        note=f"not planned: the true value {value:g} is outside the estimate's range "
                             f"({rng[0]:g} to {rng[1]:g}); give one on the estimate's scale")
    rule = Rule(low=low, high=high, equivalence=t.equivalence is not None,
                alpha=1 - (pilot_est.level if pilot_est is not None else DEFAULT_LEVEL))
    decided = p_decide(rule, disp, value, stimuli)
    # worst_cell: PASS needs every one of c cells to pass. Whatever the dependence between
    # cells, P(all pass) >= 1 - c (1 - P(one passes)) (Bonferroni), so each cell is planned
    # for 1 - (1 - target) / c; FAIL needs one cell, so the per-cell target suffices.
    c = cells if t.over == "worst_cell" else 1
    pass_target = 1 - (1 - target) / c
    note = (f"every one of {c} cells must PASS: each is planned for P >= {pass_target:.4g}, so that all pass "
            f"with P >= {target:g} (Bonferroni); P now is that lower bound" if c > 1 else "")
    mde = detectable(rule, disp, stimuli, target, limits=rng)
    if c > 1:
        mde = Detectable(fail_beyond=mde.fail_beyond,
                         pass_inside=detectable(rule, disp, stimuli, pass_target, limits=rng).pass_inside)
    if decided is None:
        return _replace(base, kind=disp.kind, true_value=value, true_source=source, noise=noise, mde=mde,
                        note="the true value is on a bound: no n decides it")
    verdict, prob = decided
    if verdict == "PASS" and c > 1:
        prob = max(0.0, 1 - c * (1 - prob))
    goal = pass_target if verdict == "PASS" else target
    needed = stimuli_needed(rule, disp, value, goal)
    notes = [note] if verdict == "PASS" and note else []
    if disp.kind == "proportion":
        notes += _share_notes(rule, disp, value, goal, needed)
    return _replace(base, kind=disp.kind, true_value=value, true_source=source, noise=noise, expected=verdict,
                    power_now=prob, mde=mde, note="; ".join(notes), needed=needed)


def _share_notes(rule: Rule, disp: Dispersion, value: float, goal: float, needed: int | None) -> list[str]:
    """What a share's exact plan rests on: the sawtooth of exact power, and the binomial
    on the effective n where rows of a stimulus are neither one nor all alike."""
    out = []
    got = share_needed(rule, disp, value, goal)
    if needed is not None and got.first is not None and got.first < needed:
        out.append(f"exact binomial power first reaches {goal:.4g} at n = {got.first} but falls below it again "
                   f"at larger n (a discrete test's sawtooth); n = {needed} is the smallest from which every n "
                   f"checked (to {got.checked}) reaches it")
    if disp.factor != 1.0:
        out.append("approximate: the rows of a stimulus are partly alike (0 < ICC < 1), so the count is taken as "
                   "binomial on the effective n; the clustered interval also estimates its design effect from "
                   "the stimuli, which adds noise with few stimuli")
    return out


def _replace(row: PowerRow, **kw: object) -> PowerRow:
    from dataclasses import replace

    return replace(row, **kw)  # type: ignore[arg-type]


def _pilot_estimate(summary: RunSummary | None, mid: str, est_name: str, over: str) -> Estimate | None:
    if summary is None or mid not in summary.metrics:
        return None
    res = summary.metrics[mid]
    name = est_name or res.headline
    if over == "worst_cell":
        cells = [e for e in res.cells.get(name, {}).values() if e.has_data and e.ci_low is not None]
        # the cell with the widest interval: the plan is for the hardest cell to decide
        return max(cells, key=lambda e: (e.ci_high or 0) - (e.ci_low or 0)) if cells else None
    e = res.estimates.get(name)
    return e if e is not None and e.has_data and e.ci_low is not None and e.ci_high is not None else None


def _dispersion(est: Estimate | None, rng: tuple[float, float] | None, m: float, icc: float | None,
                sd: float | None) -> tuple[Dispersion | None, str, float | None]:
    """The per-stimulus noise of the estimate, what it rests on in words, and the ICC used."""
    from scipy import stats as st
    share = est.method.startswith("wilson") if est is not None else rng is not None
    if share and rng is not None:
        lo, hi = rng
        width = hi - lo
        if est is not None:
            rho, how = _pilot_icc(est, lo, width)
            if rho is not None and icc is None:
                f = design_factor(m, rho)
                return (Dispersion("proportion", low=lo, width=width, factor=f),
                        f"share on [{lo:g}, {hi:g}], p from the true value; pilot {how}; design effect "
                        f"{m * f:.3g} at m={m:g}", rho)
        if m == 1:
            return (Dispersion("proportion", low=lo, width=width),
                    f"share on [{lo:g}, {hi:g}], p from the true value; one row per stimulus (no design effect)",
                    None)
        rho = icc if icc is not None else DEFAULT_ICC
        f = design_factor(m, rho)
        src = "--icc" if icc is not None else "default: the largest"
        p_note = "p from the true value" if est is None else "p from the true value; the pilot gives no ICC"
        return (Dispersion("proportion", low=lo, width=width, factor=f),
                f"share on [{lo:g}, {hi:g}], {p_note}; ICC {rho:g} ({src}); design effect {m * f:.3g} at m={m:g}",
                rho)
    if est is not None:
        assert est.ci_low is not None and est.ci_high is not None and est.value is not None
        k = est.clusters or est.n
        half = (est.ci_high - est.ci_low) / 2
        if half <= 0 or k < 2:
            return None, "not planned: the pilot's interval has zero width, so it gives no standard error", None
        q = float(st.t.ppf(1 - (1 - est.level) / 2, k - 1)) if est.method in ("t", "cluster-t") \
            else float(st.norm.ppf(1 - (1 - est.level) / 2))
        sd_c = half / q * math.sqrt(k)
        m_pilot = (est.rows or est.n) / k
        scale = max(1.0, m_pilot / m)
        sd_c *= math.sqrt(scale)
        return (Dispersion("mean", sd_cluster=sd_c),
                f"mean; pilot per-stimulus SD {sd_c:.4g} (from its {est.level:.0%} {est.method} interval on {k} "
                f"stimuli, m={m_pilot:g}{f', scaled by m_pilot/m = {scale:.3g}' if scale > 1 else ''})", None)
    if sd is None:
        return (None, "not planned: a mean with no declared range has no safe default noise; give --sd or --pilot",
                None)
    rho = icc if icc is not None else DEFAULT_ICC
    f = design_factor(m, rho)
    return (Dispersion("mean", sd_cluster=sd * math.sqrt(f)),
            f"mean; row SD {sd:g} (--sd); ICC {rho:g} ({'--icc' if icc is not None else 'default: the largest'}); "
            f"design effect {m * f:.3g} at m={m:g}", rho)


def _pilot_icc(est: Estimate, lo: float, width: float) -> tuple[float | None, str]:
    """The ICC a pilot share's interval implies: its effective n (the Wilson interval inverted),
    the design effect rows / n_eff, ICC = (deff - 1) / (m - 1)."""
    from scipy import optimize
    assert est.value is not None and est.ci_low is not None and est.ci_high is not None
    rows = est.rows or est.n
    k = est.clusters or est.n
    m = rows / k
    p = (est.value - lo) / width
    target = (est.ci_high - est.ci_low) / width
    if m <= 1 or not 0 < p < 1 or target <= 0:
        return None, f"{k} stimuli, m={m:g}"
    def width_at(n: float) -> float:
        return 2 * wilson_score(p, n, est.level)[1]

    try:
        n_eff = float(optimize.brentq(lambda n: width_at(n) - target, 0.5, 1e9))
    except ValueError:
        return None, f"{k} stimuli, m={m:g} (its interval is not a Wilson interval)"
    deff = max(1.0, rows / n_eff)
    rho = min(1.0, max(0.0, (deff - 1) / (m - 1)))
    return rho, f"{k} stimuli x m={m:g}, effective n {n_eff:.1f}, ICC {rho:.3g}"


def _true_value(t: ThresholdSpec, true_values: dict[str, float], est: Estimate | None, low: float | None,
                high: float | None) -> tuple[float | None, str]:
    if t.metric in true_values:
        return true_values[t.metric], "--true-value"
    if "" in true_values:
        return true_values[""], "--true-value"
    if est is not None and est.value is not None:
        return est.value, "the pilot's estimate"
    if low is not None and high is not None:
        return (low + high) / 2, "the middle of the band (default)"
    return None, "not planned: a one-sided bound needs --true-value (or --pilot) to say what to plan for"


__all__ = ["DEFAULT_ICC", "PowerRow", "plan_power"]
