"""`over: worst_cell`: ties between equal verdicts broken by how far the interval lies
outside the band, and multiplicity-adjusted intervals (`adjust: holm|bonferroni`)."""

from __future__ import annotations

import pytest

import biasaudit.methods  # noqa: F401  (registers the metrics and their ranges)
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult
from biasaudit.spec import ThresholdSpec
from biasaudit.stats import wilson
from biasaudit.stats.adjust import at_level, distance_outside
from biasaudit.verdicts.thresholds import evaluate


def _result(cells: dict[str, Estimate]) -> MetricResult:
    first = next(iter(cells.values()))
    return MetricResult(id="bs", name="bias_score", headline="score", estimates={"score": first},
                        cells={"score": cells})


def test_two_inconclusive_cells_name_the_one_further_out() -> None:
    # the case: 7/12 = 58.3 and 9/12 = 75.0 against 35-65, both INCONCLUSIVE;
    # the milder cell comes first in the mapping, the old code kept it
    mild, strong = wilson(7, 12).scaled(100.0), wilson(9, 12).scaled(100.0)
    assert mild.ci_low is not None and mild.ci_low < 65 < (mild.ci_high or 0)
    assert strong.ci_low is not None and strong.ci_low < 65 < (strong.ci_high or 0)
    v = evaluate([ThresholdSpec(metric="bs", over="worst_cell", min=35, max=65)],
                 {"bs": _result({"neutral": mild, "hostile": strong})})[0]
    assert (v.verdict, v.cell) == ("INCONCLUSIVE", "hostile")
    # and the order of the cells does not matter
    v2 = evaluate([ThresholdSpec(metric="bs", over="worst_cell", min=35, max=65)],
                  {"bs": _result({"hostile": strong, "neutral": mild})})[0]
    assert v2.cell == "hostile"


def test_distance_is_signed_by_side() -> None:
    e = Estimate(value=30, ci_low=20, ci_high=40, n=10, method="t")
    assert distance_outside(e, 35, 65) == pytest.approx(-5)  # 35 - 40: straddles the lower bound by 5
    assert distance_outside(e, 45, 65) == pytest.approx(5)  # wholly below by 5


def test_wilson_at_another_level_is_exact() -> None:
    e = wilson(9, 12).scaled(100.0)
    w = at_level(e, 1 - 0.05 / 3, (0.0, 100.0))
    ref = wilson(9, 12, level=1 - 0.05 / 3)
    assert w.ci_low == pytest.approx(100 * (ref.ci_low or 0)) and w.ci_high == pytest.approx(100 * (ref.ci_high or 0))


def test_t_interval_at_another_level_matches_scipy() -> None:
    from scipy import stats as st

    from biasaudit.stats import mean_t

    x = [0.1, 0.4, 0.35, 0.8, 0.5, 0.2]
    e = at_level(mean_t(x), 0.99)
    lo, hi = st.t.interval(0.99, df=5, loc=sum(x) / 6, scale=st.sem(x))
    assert (e.ci_low, e.ci_high) == (pytest.approx(lo), pytest.approx(hi))


@pytest.mark.parametrize("adjust", ["bonferroni", "holm"])
def test_adjusted_worst_cell_is_wider_and_can_change_the_verdict(adjust: str) -> None:
    # 24/30 = 80 is wholly above 60 at 95% (Wilson low 62.7) but not at 1 - 0.05/3 (low 59.2)
    cells = {"a": wilson(15, 30).scaled(100.0), "b": wilson(24, 30).scaled(100.0), "c": wilson(16, 30).scaled(100.0)}
    plain = evaluate([ThresholdSpec(metric="bs", over="worst_cell", max=60)], {"bs": _result(cells)})[0]
    adj = evaluate([ThresholdSpec(metric="bs", over="worst_cell", max=60, adjust=adjust)], {"bs": _result(cells)})[0]
    assert (plain.verdict, plain.cell) == ("FAIL", "b")
    assert adj.cell == "b" and adj.adjust == adjust
    ref = wilson(24, 30, level=1 - 0.05 / 3)
    assert adj.estimate.ci_low == pytest.approx(100 * (ref.ci_low or 0))
    assert adj.verdict == "INCONCLUSIVE"


def test_adjust_needs_worst_cell() -> None:
    with pytest.raises(ValueError, match="worst_cell"):
        ThresholdSpec(metric="bs", max=60, adjust="holm")
