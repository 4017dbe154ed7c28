"""Verdicts at one look of a sequential run (`runtime.sequential`): every estimate a
threshold reads is taken at the look's nominal level (the repeated confidence interval of
a Lan-DeMets alpha-spending design, `stats.sequential`), then judged as usual, so PASS /
FAIL come only from an interval that decides at that level. Validity guards still make a
verdict INCONCLUSIVE; `adjust` (Holm, Bonferroni) still applies, on top of the look's level.
"""

from __future__ import annotations

from collections.abc import Callable

from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.verdict import VerdictRecord
from biasaudit.spec import ThresholdSpec
from biasaudit.stats.adjust import at_level
from biasaudit.stats.sequential import Boundaries
from biasaudit.verdicts.thresholds import estimate_range, evaluate, resolve

# the boundaries of the design for an estimate's alpha (1 - its level)
BoundsFor = Callable[[float], Boundaries]


def look_level(est: Estimate, bounds_for: BoundsFor, look: int) -> tuple[float, float]:
    """(nominal level, error rate spent so far) of estimate `est` at 0-based look `look`:
    1 - the nominal alpha of the design for the estimate's own alpha."""
    b = bounds_for(round(1 - est.level, 12))
    return 1 - b.nominal_alpha[look], b.spent[look]


def _at_look(est: Estimate, rng: tuple[float, float] | None, bounds_for: BoundsFor, look: int) -> Estimate:
    if not est.has_data or est.ci_low is None or est.ci_high is None:
        return est
    level, _ = look_level(est, bounds_for, look)
    if level >= 1.0:  # the look spends no error rate: it has no finite interval to decide with
        return est.model_copy(update={"ci_low": None, "ci_high": None, "level": 1.0,
                                      "note": f"{est.note}; look spends no error rate".lstrip("; ")})
    return at_level(est, level, rng)


def results_at_look(results: dict[str, MetricResult], thresholds: list[ThresholdSpec], bounds_for: BoundsFor,
                    look: int) -> dict[str, MetricResult]:
    """`results` with every estimate a threshold reads (pooled, per cell, spread) at the
    look's nominal level."""
    out = dict(results)
    for t in thresholds:
        res, name = resolve(t.metric, out)
        mid = t.metric.partition(".")[0]
        original = results[mid]
        rng = estimate_range(original, name)
        update: dict[str, object] = {}
        if name in original.estimates:
            update["estimates"] = {**res.estimates, name: _at_look(original.estimates[name], rng, bounds_for, look)}
        if name in original.cells:
            update["cells"] = {**res.cells, name: {c: _at_look(e, rng, bounds_for, look)
                                                  for c, e in original.cells[name].items()}}
        if name in original.spread:
            sp = original.spread[name]
            update["spread"] = {**res.spread,
                                name: sp.model_copy(update={"range": _at_look(sp.range, None, bounds_for, look)})}
        out[mid] = res.model_copy(update=update)
    return out


def look_verdicts(thresholds: list[ThresholdSpec], results: dict[str, MetricResult], bounds_for: BoundsFor,
                  look: int) -> list[VerdictRecord]:
    """One verdict per threshold at 0-based look `look`, from the intervals at its level."""
    out = evaluate(thresholds, results_at_look(results, thresholds, bounds_for, look))
    return [v.model_copy(update={"reason": "this look spends no error rate: it cannot decide"})
            if v.verdict == "INCONCLUSIVE" and v.estimate.level >= 1.0 and not v.blocked else v for v in out]


__all__ = ["BoundsFor", "look_level", "look_verdicts", "results_at_look"]
