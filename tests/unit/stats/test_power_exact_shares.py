"""`plan --power` for shares is exact (issue 38, item 7): the probability of the right
verdict at the planned n, computed by stats/power.py from the Wilson interval's critical
counts, equals a direct enumeration of every count k = 0..n (scipy.stats.binom) through
the verdict's own interval (`stats.wilson`) and rule (`verdicts.thresholds.judge`), and
reaches the target at the planned n and at every n after it (the sawtooth)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from biasaudit.stats import wilson, wilson_clustered
from biasaudit.stats.power import (
    Dispersion,
    Rule,
    p_decide,
    p_decide_shares,
    share_needed,
    stimuli_needed,
)
from biasaudit.verdicts.thresholds import judge, judge_equivalence

TARGET = 0.8


def enumerated(rule: Rule, p: float, n: int, verdict: str, m: int = 1) -> float:
    """P(verdict) with n stimuli at true share p: every count of positive stimuli k, its
    probability binom.pmf(k, n, p), and the verdict its own Wilson interval gives (m rows
    per stimulus, all alike: the clustered interval on those rows)."""
    total = 0.0
    for k in range(n + 1):
        if m == 1:
            e = wilson(k, n)
        else:
            rows = np.repeat((np.arange(n) < k).astype(float), m)
            e = wilson_clustered(rows, np.repeat(np.arange(n), m))
        if rule.equivalence:
            assert rule.low is not None and rule.high is not None
            v = judge_equivalence(e, rule.low, rule.high, (0.0, 1.0))[0]
        else:
            v = judge(e, rule.low, rule.high)[0]
        if v == verdict:
            total += float(binom.pmf(k, n, p))
    return total


@pytest.mark.parametrize(("p", "high", "verdict", "normal_n"), [
    (0.03, 0.1, "PASS", 110),    # a rare share under a bound
    (0.005, 0.02, "PASS", None),
    (0.2, 0.1, "FAIL", None),    # a share over a bound
])
def test_planned_n_reaches_the_target_exactly(p: float, high: float, verdict: str, normal_n: int | None) -> None:
    rule, d = Rule(low=None, high=high), Dispersion("proportion")
    n = stimuli_needed(rule, d, p, TARGET)
    assert n is not None
    got = p_decide(rule, d, p, n)
    assert got is not None and got[0] == verdict
    exact = enumerated(rule, p, n, verdict)
    print(f"p = {p} vs max {high}: n = {n}, P({verdict}) = {got[1]:.4f} (enumerated {exact:.4f})")
    assert got[1] == pytest.approx(exact, abs=1e-9)
    assert exact >= TARGET
    # the sawtooth: every n' from n to 2 n reaches the target, the one before does not
    ks = np.arange(n, 2 * n + 1, dtype=float)
    probs = p_decide_shares(rule, d, p, ks)
    assert probs is not None and bool(np.all(probs >= TARGET))
    before = p_decide(rule, d, p, n - 1)
    assert before is not None and before[1] < TARGET
    if normal_n is not None:  # the normal score-test formula's n: exact power 0.765, not 0.80
        at = p_decide(rule, d, p, normal_n)
        assert at is not None and at[1] == pytest.approx(enumerated(rule, p, normal_n, verdict), abs=1e-9)
        assert at[1] < 0.77


@pytest.mark.parametrize(("p", "low", "high", "equivalence"), [
    (0.5, 0.4, 0.6, False),
    (0.5, 0.4, 0.6, True),
    (0.2, 0.1, 0.3, True),
    (0.02, None, 0.1, False),
])
def test_bands_and_equivalence_match_the_enumeration(p: float, low: float | None, high: float,
                                                     equivalence: bool) -> None:
    rule, d = Rule(low=low, high=high, equivalence=equivalence), Dispersion("proportion")
    for n in (10, 37, 69, 120):
        got = p_decide(rule, d, p, n)
        assert got is not None
        assert got[1] == pytest.approx(enumerated(rule, p, n, got[0]), abs=1e-9), n


def test_clustered_share_with_alike_rows_is_exact_on_the_stimuli() -> None:
    # 3 rows per stimulus, all alike (ICC 1, the planner's default): the clustered interval
    # counts each stimulus once, so the plan's binomial on the stimuli is exact
    rule, d = Rule(low=None, high=0.5), Dispersion("proportion", factor=1.0)
    for n in (8, 15, 30):
        got = p_decide(rule, d, 0.2, n)
        assert got is not None
        assert got[1] == pytest.approx(enumerated(rule, 0.2, n, got[0], m=3), abs=1e-9)


def test_sawtooth_is_reported() -> None:
    need = share_needed(Rule(low=None, high=0.1), Dispersion("proportion"), 0.03, TARGET)
    assert need.first == 99 and need.needed == 113 and need.checked >= 226
