"""Issue 17 acceptance 7 (Hypothesis): no interval of a proportion leaves its range, for
every estimator a method reports a proportion with: pooled, per-cell and per-group rates
(label rates, token-probability and NLI bias scores, FiSCo's flagged share, coding
shares), pivotal accuracy, the BER family (cell and pooled), and the adjusted intervals
of `worst_cell` thresholds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biasaudit.methods.biaxis.ber import ber_estimates
from biasaudit.methods.pivotal_perplexity.metric import accuracy_of
from biasaudit.records.estimate import Estimate
from biasaudit.stats import wilson_clustered
from biasaudit.stats.adjust import at_level
from biasaudit.stats.disaggregate import Obs, by_cell, by_group, pooled, proportion

rows_strategy = st.lists(
    st.tuples(st.integers(0, 7), st.integers(0, 2), st.booleans(), st.sampled_from(["x", "y"])),
    min_size=1, max_size=40)


def _inside(e: Estimate, lo: float = 0.0, hi: float = 1.0) -> None:
    if e.ci_low is None or e.ci_high is None:
        return
    assert lo - 1e-12 <= e.ci_low <= e.ci_high <= hi + 1e-12, e
    if e.value is not None:
        assert lo - 1e-12 <= e.value <= hi + 1e-12


@settings(max_examples=150, deadline=None)
@given(rows_strategy)
def test_every_proportion_interval_stays_in_range(raw: list[tuple[int, int, bool, str]]) -> None:
    rows = [Obs(cell=f"c{c}", cluster=f"s{s}", value=float(v), fields={"g": g}) for s, c, v, g in raw]
    estimates = [pooled(rows, proportion), accuracy_of(rows), wilson_clustered([r.value for r in rows],
                                                                                 [r.cluster for r in rows])]
    estimates += list(by_cell(rows, proportion).values()) + list(by_group(rows, "g", proportion).values())
    estimates += [accuracy_of([r for r in rows if r.cell == c]) for c in {r.cell for r in rows}]
    for e in estimates:
        _inside(e)
        for level in (0.99, 1 - 0.05 / 7):  # worst-cell adjustment keeps the range too
            _inside(at_level(e, level, (0.0, 1.0)))
    for e in [pooled(rows, proportion, scale=100.0), *by_cell(rows, proportion, scale=100.0).values()]:
        _inside(e, 0.0, 100.0)  # the bias scores' 0-100 scale
        _inside(at_level(e, 0.999, (0.0, 100.0)), 0.0, 100.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(0, 5)), min_size=2, max_size=30))
def test_ber_rates_stay_in_range(raw: list[tuple[bool, bool, int]]) -> None:
    a = np.array([float(x) for x, _, _ in raw])
    b = np.array([float(y) for _, y, _ in raw])
    clusters = [f"s{k}" for _, _, k in raw]
    for ests in (ber_estimates(a, b), ber_estimates(a, b, clusters)):
        for name, e in ests.items():
            _inside(e, -1.0, 1.0) if name == "dni" else _inside(e)


def test_the_issue_case_near_perfect_accuracy() -> None:
    # 39 of 40 prompt pairs accurate, 20 stimuli x 2 conditions: the t interval gave [0.924, 1.026]
    rows = [Obs(cell=f"c{j}", cluster=f"s{i}", value=0.0 if (i, j) == (0, 0) else 1.0) for i in range(20)
            for j in range(2)]
    e = accuracy_of(rows)
    assert e.value == 0.975 and e.ci_high is not None and e.ci_high <= 1.0 and e.method == "wilson-design-effect"
    assert (e.n, e.rows, e.cells) == (20, 40, 2) and e.ci_low is not None and e.ci_low < 0.975


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 6)), min_size=1, max_size=40))
def test_clustered_wilson_holds_its_own_estimate(raw: list[tuple[bool, int]]) -> None:
    e = wilson_clustered([float(v) for v, _ in raw], [f"s{c}" for _, c in raw])
    assert e.ci_low is not None and e.ci_high is not None and e.value is not None
    assert 0.0 <= e.ci_low <= e.value <= e.ci_high <= 1.0, e  # exact: no rounding outside


def test_clustered_wilson_at_zero_and_one_is_exactly_closed() -> None:
    # the default suite's FiSCo member showed 0 [5.551e-17, 0.5615] before the bound was clamped
    zero = wilson_clustered([0.0] * 6, ["a", "a", "b", "b", "c", "c"])
    one = wilson_clustered([1.0] * 6, ["a", "a", "b", "b", "c", "c"])
    assert zero.ci_low == 0.0 and zero.value == 0.0 and 0.0 < zero.ci_high < 1.0
    assert one.ci_high == 1.0 and one.value == 1.0 and 0.0 < one.ci_low < 1.0


@pytest.mark.parametrize("level", [0.95, 0.9, 0.99])
def test_every_wilson_interval_holds_its_estimate_exactly(level: float) -> None:
    # at 0 or n successes statsmodels' bounds carry rounding (2.8e-17 above 0 with
    # alpha = 1 - 0.95; 0.9999999999999999 below 1): the estimate must still lie inside
    from statsmodels.stats.proportion import proportion_confint

    from biasaudit.stats.proportions import wilson

    for n in (1, 2, 7, 12, 40, 333):
        for x in range(n + 1):
            e = wilson(x, n, level)
            assert e.ci_low <= e.value <= e.ci_high and 0.0 <= e.ci_low and e.ci_high <= 1.0
            ref = proportion_confint(x, n, alpha=1 - level, method="wilson")
            assert e.ci_low == pytest.approx(ref[0], abs=1e-15) and e.ci_high == pytest.approx(ref[1], abs=1e-15)
            lo, hi = e.tost_interval  # type: ignore[misc]
            assert lo <= e.value <= hi
    assert wilson(0, 12).ci_low == 0.0 and wilson(12, 12).ci_high == 1.0
