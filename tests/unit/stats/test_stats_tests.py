"""Hypothesis tests, corrections, correlation, effect sizes, agreement, MI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.multitest import multipletests

from biasaudit import stats as S

RNG = np.random.default_rng(7)
X = RNG.normal(0, 1, 25)
Y = RNG.normal(0.6, 2, 31)


def test_welch_matches_scipy_and_hand_df() -> None:
    r = S.welch_t(X, Y)
    ref = st.ttest_ind(X, Y, equal_var=False)
    assert r.statistic == pytest.approx(ref.statistic) and r.p_value == pytest.approx(ref.pvalue)
    va, vb = X.var(ddof=1) / X.size, Y.var(ddof=1) / Y.size
    assert r.df == pytest.approx((va + vb) ** 2 / (va**2 / (X.size - 1) + vb**2 / (Y.size - 1)))
    assert r.df == pytest.approx(ref.df)
    assert r.statistic == pytest.approx((X.mean() - Y.mean()) / np.sqrt(va + vb))


def test_welch_constant_samples_are_defined() -> None:
    same = S.welch_t([1, 1, 1], [1, 1])
    assert (same.statistic, same.p_value) == (0.0, 1.0) and "constant" in same.note
    diff = S.welch_t([1, 1, 1], [2, 2])
    assert diff.p_value == 0.0 and diff.statistic == -np.inf


def test_paired_and_wilcoxon_match_scipy() -> None:
    a, b = X[:20], X[:20] + RNG.normal(0.3, 0.5, 20)
    r = S.paired_t(a, b)
    assert r.statistic == pytest.approx(st.ttest_rel(a, b).statistic) and r.df == 19
    w = S.wilcoxon_signed_rank(a, b)
    assert w.p_value == pytest.approx(st.wilcoxon(a, b).pvalue)
    assert S.paired_t([1, 2, 3], [1, 2, 3]).p_value == 1.0


def test_permutation_matches_scipy_and_is_seeded() -> None:
    r = S.permutation_test(X, Y, seed=3)
    ref = st.permutation_test((X, Y), lambda u, v, axis: np.mean(u, axis=axis) - np.mean(v, axis=axis),
                              vectorized=True, n_resamples=9_999, rng=np.random.default_rng(3))
    assert r.p_value == pytest.approx(ref.pvalue) and r.statistic == pytest.approx(X.mean() - Y.mean())
    assert S.permutation_test(X, Y, seed=3) == r


def _independent_siegel_tukey_ranks(values: list[float]) -> list[float]:
    # second, independent construction: walk the sorted positions from both ends with an
    # explicit schedule low, high, high, low, low, high, high, ... then average ties
    n = len(values)
    order = sorted(range(n), key=lambda i: (values[i], i))
    positions: list[int] = []
    left, right = 0, n - 1
    pattern = ["L"] + ["H", "H", "L", "L"] * n
    for side in pattern:
        if left > right:
            break
        if side == "L":
            positions.append(left)
            left += 1
        else:
            positions.append(right)
            right -= 1
    rank_at = {pos: r + 1 for r, pos in enumerate(positions)}
    ranks = [0.0] * n
    for pos, i in enumerate(order):
        ranks[i] = rank_at[pos]
    for v in set(values):
        idx = [i for i in range(n) if values[i] == v]
        mean = sum(ranks[i] for i in idx) / len(idx)
        for i in idx:
            ranks[i] = mean
    return ranks


def test_siegel_tukey_rank_pattern_textbook() -> None:
    # the textbook pattern for 10 ordered values: 1 4 5 8 9 10 7 6 3 2
    assert S.siegel_tukey_ranks(list(range(10))).tolist() == [1, 4, 5, 8, 9, 10, 7, 6, 3, 2]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_siegel_tukey_ranks_against_independent_construction(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pooled = list(np.round(rng.normal(0, 2, 25), 1))  # rounding makes ties
    assert S.siegel_tukey_ranks(pooled) == pytest.approx(_independent_siegel_tukey_ranks(pooled))


def test_siegel_tukey_without_ties_equals_mann_whitney_on_its_ranks() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.normal(0, 1, 14), rng.normal(0, 3, 11)
    ranks = np.array(_independent_siegel_tukey_ranks(list(np.concatenate([a, b]))))
    ref = st.mannwhitneyu(ranks[: a.size], ranks[a.size:], method="asymptotic", use_continuity=False)
    assert S.siegel_tukey(a, b).p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_siegel_tukey_with_ties_uses_exact_permutation_moments() -> None:
    # enumerate every way to pick the x-positions: mean and variance of W by brute force
    from itertools import combinations

    a = [1.0, 2.0, 2.0, 5.0, 9.0]
    b = [2.0, 3.0, 3.0, 4.0, 9.0, 10.0]
    pooled = a + b
    ranks = _independent_siegel_tukey_ranks(pooled)
    sums = np.array([sum(ranks[i] for i in c) for c in combinations(range(len(pooled)), len(a))])
    w = sum(ranks[: len(a)])
    z = (w - sums.mean()) / sums.std()
    r = S.siegel_tukey(a, b)
    assert r.statistic == pytest.approx(z, rel=1e-12)
    assert r.p_value == pytest.approx(2 * st.norm.sf(abs(z)), rel=1e-12)


def test_siegel_tukey_detects_dispersion() -> None:
    rng = np.random.default_rng(11)
    r = S.siegel_tukey(rng.normal(0, 5, 60), rng.normal(0, 1, 60))
    assert r.p_value < 0.01 and r.statistic < 0  # the wide sample holds the low (extreme) ranks


def test_holm_and_bh_match_statsmodels_and_hand() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    rej, adj = S.holm(p)
    # Holm by hand: sorted 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1 -> max(0.06, 0.04)=0.06
    assert adj.tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert rej.tolist() == [True, False, False, True]
    _, bh = S.benjamini_hochberg(p)
    assert bh.tolist() == pytest.approx(multipletests(p, method="fdr_bh")[1].tolist())


@pytest.mark.parametrize("kind, ref", [("pearson", st.pearsonr), ("spearman", st.spearmanr), ("kendall", st.kendalltau)])
def test_correlations_match_scipy(kind: str, ref) -> None:  # type: ignore[no-untyped-def]
    x = RNG.normal(size=40)
    y = x + RNG.normal(size=40)
    e = S.correlation(x, y, kind=kind, n_resamples=500)
    assert e.value == pytest.approx(ref(x, y)[0])
    assert e.ci_low < e.value < e.ci_high


def test_kendall_tau_b_with_ties_by_hand() -> None:
    # x = [1,2,2,3], y = [1,3,2,3]: pairs concordant C=4, discordant D=0... computed by hand:
    # (1,2):C (1,3):C (1,4):C (2,3): x tie (2,4): y tie (3,4):C -> C=4, D=0, ties x=1, y=1
    # tau_b = (C-D)/sqrt((C+D+Tx)(C+D+Ty)) = 4/sqrt(5*5) = 0.8
    e = S.correlation([1, 2, 2, 3], [1, 3, 2, 3], kind="kendall", n_resamples=50)
    assert e.value == pytest.approx(0.8)


def test_constant_correlation_is_defined() -> None:
    e = S.correlation([1, 1, 1, 1], [1, 2, 3, 4])
    assert e.value is None and "constant" in e.note


def test_linear_fit_matches_linregress() -> None:
    x = np.arange(10.0)
    y = 2 * x + RNG.normal(size=10)
    f = S.linear_fit(x, y)
    ref = st.linregress(x, y)
    assert f.slope == pytest.approx(ref.slope) and f.p_value == pytest.approx(ref.pvalue)
    assert f.r_squared == pytest.approx(ref.rvalue**2)
    assert S.linear_fit([1, 1, 1], [1, 2, 3]).slope is None


def test_effect_sizes_by_hand() -> None:
    a, b = [1.0, 2.0, 3.0], [2.0, 4.0, 6.0]
    # pooled variance (1 + 4) / 2 = 2.5; d = (2 - 4)/sqrt(2.5)
    assert S.cohens_d(a, b) == pytest.approx(-2 / np.sqrt(2.5))
    assert S.variance_ratio(a, b) == pytest.approx(0.25)
    assert S.cohens_d([1, 1], [1, 1]) is None


def test_eta_squared_matches_statsmodels_anova() -> None:
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    g = np.repeat(["a", "b", "c"], 20)
    y = (RNG.random(60) < np.repeat([0.2, 0.5, 0.7], 20)).astype(float)
    table = anova_lm(smf.ols("y ~ C(g)", data=pd.DataFrame({"y": y, "g": g})).fit())
    ref = table["sum_sq"]["C(g)"] / table["sum_sq"].sum()
    assert S.eta_squared(y, g) == pytest.approx(ref)
    assert S.eta_squared([1, 1, 1], ["a", "b", "c"]) is None


def test_two_way_eta_squared_balanced_by_hand() -> None:
    # balanced 2x2 with pure main effect of A: eta2_A = SS_A/SS_T, no B, no interaction
    a = ["x"] * 4 + ["y"] * 4
    b = ["p", "q"] * 4
    y = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    r = S.eta_squared_two_way(y, a, b, names=("A", "B"))
    assert r.eta2_a == pytest.approx(1.0) and r.eta2_b == pytest.approx(0.0, abs=1e-12)
    assert r.eta2_interaction == pytest.approx(0.0, abs=1e-12)


def test_agreement_against_libraries_and_published_example() -> None:
    a = ["E", "D", "N", "E", "E", "D", "R", "N"]
    b = ["E", "D", "E", "E", "N", "D", "R", "N"]
    assert S.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert S.cohen_kappa(["E", "E"], ["E", "E"]) is None
    # Fleiss (1971)-style check against statsmodels on three raters
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    rows = [["E", "E", "D"], ["D", "D", "D"], ["N", "E", "N"], ["E", "E", "E"], ["R", "D", "R"]]
    labels = sorted({x for r in rows for x in r})
    table, _ = aggregate_raters(np.array([[labels.index(x) for x in r] for r in rows]), n_cat=len(labels))
    assert S.fleiss_kappa(rows) == pytest.approx(fleiss_kappa(table))
    # Krippendorff (2011), nominal data with missing values: alpha = 0.743
    n = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    units = list(zip(*coders, strict=True))
    assert S.krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_two_raters_no_missing_matches_hand_formula() -> None:
    # with complete data and 2 raters, alpha = 1 - (n-1) * D_o/D_e on the pooled values
    a = ["x", "x", "y", "y", "x"]
    b = ["x", "y", "y", "y", "x"]
    vals = a + b
    n = len(vals)
    d_o = sum(u != v for u, v in zip(a, b, strict=True)) * 2 / n
    counts = {c: vals.count(c) for c in set(vals)}
    d_e = (n * n - sum(c * c for c in counts.values())) / (n * (n - 1))
    assert S.krippendorff_alpha_nominal(list(zip(a, b, strict=True))) == pytest.approx(1 - d_o / d_e)


def test_mutual_information_ranks_the_informative_factor() -> None:
    n = 300
    f = pd.DataFrame({"identity": RNG.choice(["a", "b", "c"], n), "template": RNG.choice(["t1", "t2"], n)})
    y = np.where(f["identity"] == "a", 2.0, 0.0) + RNG.normal(0, 0.1, n)
    mi = S.mutual_information(f, y)
    assert mi.iloc[0]["factor"] == "identity"
    assert mi.groupby("factor")["mi"].sum()["identity"] > 5 * mi.groupby("factor")["mi"].sum()["template"]
