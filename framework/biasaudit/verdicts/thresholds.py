"""Interval-aware verdicts: PASS only when the whole interval is inside the allowed band,
FAIL when it is wholly outside, INCONCLUSIVE otherwise (or with no data).

`over: worst_cell` judges every cell and reports the worst verdict; among cells with the
same verdict, the one whose interval lies furthest outside the band (see
`stats.adjust.distance_outside`). With `adjust: bonferroni` every cell's interval is taken
at level 1 - alpha/k (k cells with data); with `adjust: holm` the cells are ordered from
the furthest out, the i-th (from 0) is taken at 1 - alpha/(k - i), and once one cell is
not wholly outside, no later cell counts as FAIL (Holm's step-down). The default,
`adjust: none`, judges each cell at its own level.

Equivalence thresholds (`equivalence: {low, high}`, TOST) make a different claim: PASS
only when the 1 - 2 alpha interval (90% beside a 95% one, made by the estimate's own
method: `Estimate.tost_interval`, or an exact Wilson / t recomputation) lies within the
band, i.e. two one-sided tests at alpha each reject a value outside it ("equivalence
shown within [low, high]"); FAIL when the 1 - alpha interval lies wholly outside the band
(a deviation beyond the margin is shown at the usual two-sided level); INCONCLUSIVE
otherwise, and whenever the interval is missing or of zero width. Over cells, every cell
must show equivalence (an intersection-union test: no multiplicity adjustment is needed).

`share_test: exact` decides a share counted once per stimulus (a plain Wilson estimate)
on its Clopper-Pearson interval instead (exact binomial tests; `stats.adjust.exact_share`).
"""

from __future__ import annotations

import fnmatch

from biasaudit.errors import SpecError
from biasaudit.metrics.validity import blocking_reason
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.verdict import Verdict, VerdictRecord
from biasaudit.registry import METRICS
from biasaudit.spec import ThresholdSpec
from biasaudit.stats.adjust import at_level, distance_outside, exact_at_level, exact_share

_RANK = {"PASS": 0, "INCONCLUSIVE": 1, "FAIL": 2}


def judge(est: Estimate, lo: float | None, hi: float | None) -> tuple[Verdict, str]:
    if not est.has_data:
        note = est.note or "no data"
        return "INCONCLUSIVE", note if note.startswith(("undefined", "no data")) else f"undefined: {note}"
    if est.ci_low is None or est.ci_high is None:
        return "INCONCLUSIVE", f"no interval ({est.note or 'too few units'})"
    inside_lo = lo is None or est.ci_low >= lo
    inside_hi = hi is None or est.ci_high <= hi
    if inside_lo and inside_hi:
        return "PASS", "the whole interval is within the allowed range"
    if (hi is not None and est.ci_low > hi) or (lo is not None and est.ci_high < lo):
        return "FAIL", "the whole interval is outside the allowed range"
    return "INCONCLUSIVE", "the interval straddles a bound; more data would decide"


def judge_equivalence(est: Estimate, low: float, high: float,
                      rng: tuple[float, float] | None = None) -> tuple[Verdict, str, Estimate | None]:
    """The TOST verdict of `est` against the band [low, high] (see the module text), with
    the estimate at 1 - 2 alpha that PASS rests on (None when there is none)."""
    if not est.has_data or est.ci_low is None or est.ci_high is None:
        v, why = judge(est, low, high)
        return v, why, None
    if est.ci_low == est.ci_high:
        return "INCONCLUSIVE", f"degenerate interval (zero width{': ' + est.note if est.note else ''}); " \
            "equivalence cannot be shown", None
    tost = tost_estimate(est, rng)
    band = f"[{low:g}, {high:g}]"
    if est.ci_low > high or est.ci_high < low:
        return "FAIL", (f"deviation beyond the margin shown: the whole {est.level:.0%} interval lies outside "
                        f"the band {band}"), tost
    if tost is None:
        return "INCONCLUSIVE", (f"equivalence not decidable: the estimate's method ({est.method}) gives no "
                                f"{2 * est.level - 1:.0%} interval, and stretching its {est.level:.0%} one "
                                "would not be the same method"), None
    assert tost.ci_low is not None and tost.ci_high is not None
    inner = f"the {tost.level:.0%} interval [{tost.ci_low:.4g}, {tost.ci_high:.4g}]"
    if tost.ci_low >= low and tost.ci_high <= high:
        return "PASS", f"equivalence shown within {band}: {inner} lies within the band", tost
    return "INCONCLUSIVE", f"equivalence not shown: {inner} reaches outside the band {band}; more data would decide", tost


def tost_estimate(est: Estimate, rng: tuple[float, float] | None = None) -> Estimate | None:
    """`est` at level 1 - 2 alpha by its own method: the interval the estimator made beside
    the 1 - alpha one, else an exact recomputation (Wilson from the count, t from the
    standard error); None when neither exists (never a stretched interval)."""
    level = est.tost_level
    if est.tost_interval is not None:
        lo, hi = est.tost_interval
        return est.model_copy(update={"ci_low": lo, "ci_high": hi, "level": level, "tost_interval": None})
    return exact_at_level(est, level, rng)


def _judge(t: ThresholdSpec, est: Estimate, rng: tuple[float, float] | None) -> tuple[Verdict, str, Estimate | None]:
    """The verdict of one estimate under threshold `t`, of either kind."""
    if t.equivalence is not None:
        return judge_equivalence(est, t.equivalence.low, t.equivalence.high, rng)
    v, why = judge(est, t.min, t.max)
    return v, why, None


def resolve(ref: str, results: dict[str, MetricResult]) -> tuple[MetricResult, str]:
    mid, _, est = ref.partition(".")
    if mid not in results:
        raise SpecError(f"threshold names metric {mid!r}, which the spec does not compute",
                        key="thresholds", hint=f"metrics: {', '.join(results)}")
    res = results[mid]
    est = est or res.headline
    if est not in res.estimates:
        raise SpecError(f"metric {mid!r} has no estimate {est!r}", key="thresholds",
                        hint=f"estimates: {', '.join(res.estimates)}")
    return res, est


def evaluate(thresholds: list[ThresholdSpec], results: dict[str, MetricResult]) -> list[VerdictRecord]:
    out = [_guarded(v, results) for v in _evaluate(thresholds, results)]
    return out


def _guarded(v: VerdictRecord, results: dict[str, MetricResult]) -> VerdictRecord:
    """A verdict on a measurement a validity guard blocks is INCONCLUSIVE, whatever the
    interval says (metrics/validity.py); the interval stays on record."""
    res, name = resolve(v.metric, results)
    why = blocking_reason(res.validity, name)
    if why is None or v.verdict == "INCONCLUSIVE" and v.reason.startswith("not decidable"):
        return v
    return v.model_copy(update={"verdict": "INCONCLUSIVE", "reason": f"not decidable: {why}",
                                "blocked": True, "would_be": v.verdict})


def _evaluate(thresholds: list[ThresholdSpec], results: dict[str, MetricResult]) -> list[VerdictRecord]:
    out = []
    for t in thresholds:
        res, name = resolve(t.metric, results)
        lo, hi = t.band
        if t.over == "worst_cell":
            if not res.cells.get(name) and _no_data(res, name):
                out.append(_undefined(t, res, name, "no cell has data"))
                continue
            if not res.cells.get(name):
                raise SpecError(f"threshold `over: worst_cell` on {t.metric!r}: the metric reports no per-cell "
                                f"values for estimate {name!r}", key="thresholds",
                                hint=f"estimates with per-cell values: {', '.join(res.cells) or 'none'}")
            v, why, cell, est = worst_cell(res, name, t)
            tost = _judge(t, est, estimate_range(res, name))[2] if t.equivalence is not None else None
            out.append(VerdictRecord(metric=t.metric, over="worst_cell", min=lo, max=hi, estimate=est, adjust=t.adjust,
                                     verdict=v, cell=cell, refs=t.refs, reason=why, sanity=t.sanity, note=t.note,
                                     equivalence=t.equivalence is not None, tost=tost))
        elif t.over == "spread":
            sp = res.spread.get(name)
            # a single cell with data may be the whole design (the spec's error), so only
            # none at all counts as missing answers
            if sp is None and _no_data(res, name) and len(res.cells.get(name, {})) != 1:
                out.append(_undefined(t, res, name, "fewer than two cells have data"))
                continue
            if sp is None:
                raise SpecError(f"threshold `over: spread` on {t.metric!r}: the metric reports no spread for "
                                f"estimate {name!r}", key="thresholds",
                                hint=f"estimates with a spread: {', '.join(res.spread) or 'none'}")
            v, why, tost = _judge(t, sp.range, None)
            out.append(VerdictRecord(metric=t.metric, over="spread", min=lo, max=hi, estimate=sp.range,
                                     verdict=v, cell=f"{sp.min_cell} .. {sp.max_cell}", refs=t.refs, reason=why,
                                     sanity=t.sanity, note=t.note, equivalence=t.equivalence is not None, tost=tost))
        else:
            est = _tested(t, res.estimates[name], estimate_range(res, name))
            v, why, tost = _judge(t, est, estimate_range(res, name))
            out.append(VerdictRecord(metric=t.metric, over="pooled", min=lo, max=hi, estimate=est,
                                     verdict=v, refs=t.refs, reason=why, sanity=t.sanity, note=t.note,
                                     equivalence=t.equivalence is not None, tost=tost))
    return out


def _tested(t: ThresholdSpec, est: Estimate, rng: tuple[float, float] | None) -> Estimate:
    """The estimate the threshold decides on: with `share_test: exact`, a share counted
    once per stimulus gets its exact binomial (Clopper-Pearson) interval."""
    return exact_share(est, rng) if t.share_test == "exact" else est


def _no_data(res: MetricResult, name: str) -> bool:
    """A metric with per-cell values for `name` but none now, or with no data at all (every
    request failed): the cells are missing for want of answers, not because the spec asks
    for a breakdown the metric never gives."""
    return name in res.cells or not res.estimates[name].has_data


def _undefined(t: ThresholdSpec, res: MetricResult, name: str, why: str) -> VerdictRecord:
    """INCONCLUSIVE on a per-cell threshold with nothing to judge, on the pooled estimate
    (whose note says why it is empty) when it has no data either."""
    est = res.estimates[name]
    if est.has_data:
        est = Estimate.no_data(est.method, f"undefined: {why}")
    lo, hi = t.band
    v, reason = judge(est, lo, hi)
    return VerdictRecord(metric=t.metric, over=t.over, min=lo, max=hi, estimate=est, adjust=t.adjust,
                         verdict=v, refs=t.refs, reason=reason, sanity=t.sanity, note=t.note,
                         equivalence=t.equivalence is not None)


def estimate_range(res: MetricResult, name: str) -> tuple[float, float] | None:
    """The range the metric declares for estimate `name` (None: unbounded or unknown)."""
    if res.name not in METRICS:
        return None
    for pat, rng in METRICS.get(res.name).bounds:
        if (name == res.headline) if pat == "" else fnmatch.fnmatchcase(name, pat):
            return rng
    return None


def worst_cell(res: MetricResult, name: str, t: ThresholdSpec) -> tuple[Verdict, str, str, Estimate]:
    """The worst cell of estimate `name` under threshold `t` (see the module text)."""
    rng = estimate_range(res, name)
    cells = {c: _tested(t, e, rng) for c, e in res.cells[name].items()}
    t_lo, t_hi = t.band
    with_data = [c for c, e in cells.items() if e.has_data and e.ci_low is not None]
    k = len(with_data)
    adjusted = dict(cells)
    if t.adjust != "none" and k > 1:
        order = sorted(with_data, key=lambda c: -distance_outside(cells[c], t_lo, t_hi))
        for i, c in enumerate(order):
            alpha = 1 - cells[c].level
            m = k if t.adjust == "bonferroni" else k - i
            e = at_level(cells[c], 1 - alpha / m, rng)
            adjusted[c] = e.model_copy(update={"note": f"{e.note}; {t.adjust} over {k} cells".lstrip("; ")})
    judged: list[tuple[Verdict, str, str, Estimate]] = []
    stepped_down = False
    for c in (sorted(adjusted, key=lambda c: -distance_outside(cells[c], t_lo, t_hi)) if t.adjust == "holm"
              else adjusted):
        v, why, _ = _judge(t, adjusted[c], rng)
        if t.adjust == "holm" and stepped_down and v == "FAIL":
            v, why = "INCONCLUSIVE", "outside the range, but Holm's step-down stopped at a cell further out"
        stepped_down = stepped_down or v != "FAIL"
        judged.append((v, why, c, adjusted[c]))
    return max(judged, key=lambda j: (_RANK[j[0]], distance_outside(j[3], t_lo, t_hi)))
