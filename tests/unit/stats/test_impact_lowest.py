"""The lowest impact ratio's interval is simultaneous (issue 38, item 5).

`lowest.<field>` is min_g p_g / max_h p_h: both groups of the reported pair are picked
from the data, so a per-pair 95% Katz interval made a `min: 0.8` threshold FAIL 6-9% of
the time with the true lowest ratio exactly 0.8 (nominal one-sided rate 2.5%). The
interval now uses the critical value of the least favourable configuration
(`stats.impact.lowest_critical`). Checked against the simulation truth (seeded binomial
draws through `impact_ratios`), against statsmodels' `confint_proportions_2indep(
compare="ratio", method="log")` for the per-pair interval at the same level, and the
critical value against a Monte Carlo of the normal statistic it is defined by."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.proportion import confint_proportions_2indep

from biasaudit.stats.impact import impact_ratios, lowest_critical

REPS = 1000
MC_SD = float(np.sqrt(0.025 * 0.975 / REPS))  # 0.49 points at 1000 runs


def _01(selected: int, n: int) -> list[float]:
    return [1.0] * selected + [0.0] * (n - selected)


def _fail_rate(ps: list[float], ns: list[int], seed: int, bound: float = 0.8) -> tuple[float, list[tuple]]:
    """Share of seeded runs whose `lowest` interval lies wholly below `bound` (a FAIL of
    `min: bound`), and a few runs' (counts, estimate) for the reference check."""
    rng = np.random.default_rng(seed)
    fails, kept = 0, []
    for i in range(REPS):
        x = rng.binomial(ns, ps)
        fam = impact_ratios({f"g{j}": _01(int(k), n) for j, (k, n) in enumerate(zip(x, ns, strict=True))}, min_n=10)
        low = fam.lowest()
        assert low.ci_high is not None
        fails += low.ci_high < bound
        if i < 15:
            kept.append((fam, low))
    return fails / REPS, kept


def _check_against_statsmodels(kept: list[tuple], groups: int) -> None:
    """Each kept run's interval is statsmodels' log (Katz) interval of the reported pair at
    the per-pair level 1 - 2 sf(c)."""
    c = lowest_critical(groups, 0.025)
    for fam, low in kept:
        rows = {r.group: r for r in fam.rows}
        g = low.note.split()[1]
        a, ref = rows[g], rows[fam.reference]
        lo, hi = confint_proportions_2indep(a.selected, a.rate.n, ref.selected, ref.rate.n, compare="ratio",
                                            method="log", alpha=2 * norm.sf(c))
        assert (low.ci_low, low.ci_high) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))
        assert low.value == pytest.approx((a.selected / a.rate.n) / (ref.selected / ref.rate.n))


def test_five_groups_of_100_true_lowest_exactly_08() -> None:
    """One group at 0.4 and four at 0.5 (true lowest ratio 0.8): main FAILed 6.1% (2000
    runs, 7.3% in the issue's simulation); nominal 2.5%."""
    rate, kept = _fail_rate([0.4, 0.5, 0.5, 0.5, 0.5], [100] * 5, seed=38_05)
    assert rate <= 0.025 + 2 * MC_SD, rate
    _check_against_statsmodels(kept, 5)


def test_least_favourable_split_two_low_three_high() -> None:
    """Two groups at 0.4 and three at 0.5: the configuration the critical value is solved
    at, so the FAIL rate is about 2.5% (main: 9.4%; Bonferroni over G - 1 = 4 pairs would be
    above it)."""
    rate, _ = _fail_rate([0.4, 0.4, 0.5, 0.5, 0.5], [100] * 5, seed=38_52)
    assert rate <= 0.025 + 2 * MC_SD, rate
    assert rate >= 0.01, rate  # not needlessly conservative where it is solved (200,000 runs: 1.65%)


def test_ten_equal_groups() -> None:
    """Ten groups of 100 at the same rate 0.3 (true lowest ratio 1): main FAILed 6.7%."""
    rate, kept = _fail_rate([0.3] * 10, [100] * 10, seed=38_10)
    assert rate <= 0.025 + 2 * MC_SD, rate
    _check_against_statsmodels(kept, 10)


def test_critical_value_by_monte_carlo_and_its_bounds() -> None:
    """c is where P(max of G - k normals - min of k others > c sqrt 2) = 0.025 at the worst
    k: a Monte Carlo of that statistic agrees; c is below Bonferroni over the G(G-1)/2 pairs
    (valid, wider) and, from 5 groups on, above Bonferroni over G - 1 pairs (too narrow at
    the split); two groups: 1.96."""
    assert lowest_critical(2, 0.025) == pytest.approx(norm.isf(0.025), abs=1e-6)
    rng = np.random.default_rng(1)
    for g in (3, 5, 10):
        c = lowest_critical(g, 0.025)
        z = rng.standard_normal((400_000, g))
        k = g // 2
        p = float(np.mean(z[:, k:].max(axis=1) - z[:, :k].min(axis=1) > c * np.sqrt(2)))
        assert p == pytest.approx(0.025, abs=4 * np.sqrt(0.025 * 0.975 / 400_000)), (g, p)
        assert c < norm.isf(0.025 / (g * (g - 1) / 2)), g  # Bonferroni over all pairs: valid, wider
        if g >= 5:  # Bonferroni over G - 1 pairs is too narrow at the split (not at 3 groups)
            assert norm.isf(0.025 / (g - 1)) < c, g
    # the figures: 5 groups 2.587, 10 groups 3.024
    assert lowest_critical(5, 0.025) == pytest.approx(2.5874, abs=1e-3)
    assert lowest_critical(10, 0.025) == pytest.approx(3.0244, abs=1e-3)


def test_the_note_and_method_say_so() -> None:
    fam = impact_ratios({"a": _01(40, 100), "b": _01(50, 100), "c": _01(48, 100)}, min_n=10)
    low = fam.lowest()
    assert low.method == "katz-log-simultaneous"
    assert "simultaneous over the 3 groups" in low.note and "critical value 2.212" in low.note
    # the per-group ratio keeps its per-pair 95% interval (an LL144 table's)
    [a] = [r for r in fam.rows if r.group == "a"]
    assert a.ratio.method == "katz-log" and low.ci_low < a.ratio.ci_low and low.value == a.ratio.value
    # two groups: the plain Katz interval, nothing to adjust
    two = impact_ratios({"a": _01(40, 100), "b": _01(50, 100)}, min_n=10)
    assert two.lowest().method == "katz-log" and two.lowest().ci_low == pytest.approx(two.rows[0].ratio.ci_low)
