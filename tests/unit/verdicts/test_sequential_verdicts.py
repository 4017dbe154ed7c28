"""Verdicts at a look of a sequential run (verdicts/sequential.py): every estimate a
threshold reads is taken at the look's nominal level, then judged as usual."""

from __future__ import annotations

from functools import cache

import pytest

import biasaudit.methods  # noqa: F401  (registers the metrics and their ranges)
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult, ValidityFlag
from biasaudit.spec import ThresholdSpec
from biasaudit.stats import wilson
from biasaudit.stats.sequential import Boundaries, boundaries
from biasaudit.verdicts.sequential import look_verdicts, results_at_look

FRACTIONS = (0.05, 0.5, 1.0)  # O'Brien-Fleming spends ~1e-18 at 0.05: the first look cannot decide


@cache
def bounds_for(alpha: float) -> Boundaries:
    return boundaries(FRACTIONS, alpha, "obrien_fleming")


def _bias_score(k: int, n: int, cells: dict[str, tuple[int, int]] | None = None) -> MetricResult:
    """A bias_score result (range 0-100) with k of n pairs preferring the stereotype."""
    return MetricResult(id="bs", name="bias_score", headline="score", estimates={"score": wilson(k, n).scaled(100.0)},
                        cells={"score": {c: wilson(a, b).scaled(100.0) for c, (a, b) in (cells or {}).items()}})


def test_pooled_estimate_is_judged_on_the_wilson_interval_at_the_looks_level() -> None:
    res = {"bs": _result_18_of_20()}
    level = 1 - bounds_for(0.05).nominal_alpha[1]
    # |Z| >= 2.963 at half the information (almost nothing spent at 0.05: the two-look value)
    assert level == pytest.approx(0.99695, abs=1e-5)
    got = results_at_look(res, [ThresholdSpec(metric="bs", min=40, max=60)], bounds_for, 1)["bs"].estimates["score"]
    ref = wilson(18, 20, level)
    assert (got.ci_low, got.ci_high, got.level) == (pytest.approx(100 * (ref.ci_low or 0)),
                                                    pytest.approx(100 * (ref.ci_high or 0)), level)
    # 18/20: the plain 95% interval is [69.9, 97.2]; at 0.99695 it is [57.2, 98.4]: FAIL above 55
    v = look_verdicts([ThresholdSpec(metric="bs", min=40, max=55)], res, bounds_for, 1)[0]
    assert v.verdict == "FAIL" and v.estimate.level == level


def _result_18_of_20() -> MetricResult:
    return _bias_score(18, 20)


def test_an_interval_that_decides_at_95_percent_may_not_decide_at_the_look() -> None:
    # 16/20 = 80: the 95% Wilson interval [58.4, 91.9] lies above 55; at the look's 0.99695 it
    # is [46.9, 94.8] and straddles it
    res = {"bs": _bias_score(16, 20)}
    th = [ThresholdSpec(metric="bs", max=55)]
    plain = wilson(16, 20).scaled(100.0)
    assert plain.ci_low is not None and plain.ci_low > 55  # the fixed 95% interval would FAIL
    v = look_verdicts(th, res, bounds_for, 1)[0]
    assert v.verdict == "INCONCLUSIVE" and v.estimate.ci_low is not None and v.estimate.ci_low < 55


def test_a_look_that_spends_nothing_cannot_decide() -> None:
    res = {"bs": _bias_score(20, 20)}
    v = look_verdicts([ThresholdSpec(metric="bs", min=40, max=60)], res, bounds_for, 0)[0]
    assert v.verdict == "INCONCLUSIVE"
    assert v.reason == "this look spends no error rate: it cannot decide"
    assert v.estimate.ci_low is None and v.estimate.level == 1.0


def test_worst_cell_takes_the_looks_level_then_the_adjustment() -> None:
    res = {"bs": _bias_score(30, 40, {"a": (15, 20), "b": (15, 20)})}
    th = [ThresholdSpec(metric="bs", over="worst_cell", max=90, adjust="bonferroni")]
    v = look_verdicts(th, res, bounds_for, 2)[0]
    level = 1 - bounds_for(0.05).nominal_alpha[2]
    ref = wilson(15, 20, 1 - (1 - level) / 2)
    assert v.estimate.level == pytest.approx(1 - (1 - level) / 2)
    assert v.estimate.ci_high == pytest.approx(100 * (ref.ci_high or 0))
    assert v.verdict == "INCONCLUSIVE"


def test_validity_guards_still_hold_a_verdict_back() -> None:
    flag = ValidityFlag(kind="valid_share", message="only 40% of the units could be scored", blocking=True)
    res = {"bs": _bias_score(20, 20).model_copy(update={"validity": [flag]})}
    v = look_verdicts([ThresholdSpec(metric="bs", min=40, max=60)], res, bounds_for, 2)[0]
    assert v.verdict == "INCONCLUSIVE" and v.blocked and v.would_be == "FAIL"


def test_undefined_estimate_stays_inconclusive() -> None:
    res = {"bs": MetricResult(id="bs", name="bias_score", headline="score",
                              estimates={"score": Estimate.no_data("wilson", "undefined: every pair ties")})}
    v = look_verdicts([ThresholdSpec(metric="bs", min=40, max=60)], res, bounds_for, 2)[0]
    assert v.verdict == "INCONCLUSIVE" and v.reason.startswith("undefined")
