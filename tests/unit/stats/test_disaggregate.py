"""The shared disaggregation helper: per group, per cell, pooled; the pooled estimate
over several rows per stimulus is cluster-robust and stays inside [0, 1]."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from biasaudit.stats import wilson_clustered
from biasaudit.stats.disaggregate import (
    Obs,
    breakdown,
    by_cell,
    by_group,
    mean,
    pooled,
    proportion,
)


def rows(values: list[float], clusters: list[str], cells: list[str] | None = None,
         fields: list[dict[str, str]] | None = None) -> list[Obs]:
    cells = cells or ["c"] * len(values)
    fields = fields or [{}] * len(values)
    return [Obs(cell=c, cluster=k, value=v, fields=f) for v, k, c, f in zip(values, clusters, cells, fields, strict=True)]


def test_one_row_per_stimulus_is_the_plain_wilson_interval() -> None:
    r = rows([1, 0, 1, 1, 0], ["a", "b", "c", "d", "e"])
    e = pooled(r)
    lo, hi = proportion_confint(3, 5, method="wilson")
    assert e.method == "wilson" and e.value == pytest.approx(0.6)
    assert (e.ci_low, e.ci_high) == pytest.approx((lo, hi)) and (e.clusters, e.cells) == (5, 1)


def test_design_effect_by_hand() -> None:
    # clusters a: [1, 0], b: [1, 0], c: [1, 1]; p = 4/6
    # sandwich variance = 3/2 * ((1 - 4/3)^2 + (1 - 4/3)^2 + (2 - 4/3)^2) / 36 = 1/36; binomial = (2/3)(1/3)/6 = 1/27
    e = wilson_clustered([1, 0, 1, 0, 1, 1], ["a", "a", "b", "b", "c", "c"])
    assert e.value == pytest.approx(2 / 3) and "design effect 0.750" in e.note
    # deff 0.75 < 1 would give n_eff 8 > n: kept at n = 6, the plain Wilson interval
    assert (e.ci_low, e.ci_high) == pytest.approx(proportion_confint(4, 6, method="wilson"))
    # positively correlated clusters: a [1, 1, 1], b [0, 0, 0], c [1, 1, 0]; p = 5/9
    # sandwich = 3/2 * ((4/3)^2 + (5/3)^2 + (1/3)^2) / 81 = 7/81; binomial = (5/9)(4/9)/9: deff = 3.15;
    # n_eff = 9 / 3.15 = 2.86 is below the 3 stimuli: kept at 3
    e2 = wilson_clustered([1, 1, 1, 0, 0, 0, 1, 1, 0], list("aaabbbccc"))
    p = 5 / 9
    assert "design effect 3.150" in e2.note and "effective n 3.0" in e2.note
    z = 1.959963984540054
    n_eff = 3.0
    centre = (p + z * z / (2 * n_eff)) / (1 + z * z / n_eff)
    half = z * np.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff**2)) / (1 + z * z / n_eff)
    assert (e2.ci_low, e2.ci_high) == pytest.approx((centre - half, centre + half))
    # a milder design effect is used as is: a [1, 1, 0], b [1, 0, 0], c [1, 1, 1], d [0, 0, 0]
    vals = [1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0]
    e3 = wilson_clustered(vals, list("aaabbbcccddd"))
    p3 = 0.5
    robust3 = 4 / 3 * sum((s - 3 * p3) ** 2 for s in (2, 1, 3, 0)) / 144
    deff3 = robust3 / (p3 * (1 - p3) / 12)
    assert f"design effect {deff3:.3f}" in e3.note and 4 < 12 / deff3 < 12


def test_all_ones_keep_a_real_interval_inside_0_1() -> None:
    e = pooled(rows([1.0] * 6, ["a", "a", "a", "b", "b", "b"], ["x", "y", "z"] * 2))
    lo, _ = proportion_confint(2, 2, method="wilson")  # the two stimuli count once each
    assert e.method == "wilson-design-effect" and e.ci_high == 1.0 and e.ci_low == pytest.approx(lo)
    assert 0.0 < e.ci_low < 1.0 and (e.clusters, e.cells, e.n, e.rows) == (2, 3, 2, 6)


def test_clustered_coverage_by_simulation() -> None:
    """Stimuli with their own endorsement probability (beta, ICC 0.3) asked under 8
    conditions: the design-effect interval covers the true rate about 95% of the time;
    the naive Wilson interval on all rows covers far less often."""
    rng = np.random.default_rng(7)
    true_p, k, m, runs = 0.3, 30, 8, 600
    a, b = true_p * (1 / 0.3 - 1), (1 - true_p) * (1 / 0.3 - 1)
    cover = naive = 0
    for _ in range(runs):
        ps = rng.beta(a, b, k)
        x = (rng.random((k, m)) < ps[:, None]).astype(float).ravel()
        clusters = np.repeat(np.arange(k), m).astype(str)
        e = wilson_clustered(x, clusters)
        cover += e.ci_low <= true_p <= e.ci_high
        lo, hi = proportion_confint(int(x.sum()), x.size, method="wilson")
        naive += lo <= true_p <= hi
    assert 0.91 <= cover / runs <= 0.98
    assert naive / runs < 0.80


def test_means_are_cluster_robust_t_and_groups_sorted() -> None:
    r = rows([0.5, -0.5, 1.0, 0.0], ["a", "a", "b", "b"], ["x", "y", "x", "y"],
             [{"g": "q"}, {"g": "q"}, {"g": "p"}, {"g": "p"}])
    e = pooled(r, mean)
    assert e.method == "cluster-t" and e.value == pytest.approx(0.25)
    groups = by_group(r, "g", mean)
    assert list(groups) == ["p", "q"] and groups["p"].value == pytest.approx(0.5)
    cells = by_cell(r, mean, cells=["y", "x"])
    assert list(cells) == ["y", "x"] and cells["x"].value == pytest.approx(0.75) and cells["x"].method == "t"


def test_one_stimulus_gives_a_wide_rate_and_no_mean_interval() -> None:
    rows1 = rows([1.0, 0.0, 1.0, 1.0], ["a"] * 4, ["w", "x", "y", "z"])
    e = pooled(rows1)
    # one stimulus counts once: the Wilson interval of 0.75 on n = 1
    centre, z = 0.75, 1.959963984540054
    half = z * np.sqrt(centre * 0.25 + z * z / 4) / (1 + z * z)
    assert (e.ci_low, e.ci_high) == pytest.approx(((centre + z * z / 2) / (1 + z * z) - half,
                                                   (centre + z * z / 2) / (1 + z * z) + half))
    m = pooled(rows1, mean)
    assert m.value == pytest.approx(0.75) and m.ci_low is None and "one stimulus" in m.note


def test_breakdown_scale() -> None:
    r = rows([1, 0, 1, 1], ["a", "b", "c", "d"], fields=[{"t": "u"}, {"t": "u"}, {"t": "v"}, {"t": "v"}])
    bd = breakdown(r, proportion, by=["t"], scale=100.0)
    assert bd.pooled.value == pytest.approx(75.0) and bd.groups["t"]["v"].value == pytest.approx(100.0)
    assert bd.cells["c"].ci_high == pytest.approx(100 * proportion_confint(3, 4, method="wilson")[1])


@pytest.mark.parametrize("shape", ["clustered", "one row per stimulus", "one stimulus"])
@pytest.mark.parametrize("estimator", ["proportion", "mean"])
def test_pooled_over_columns_is_pooled_over_rows(shape: str, estimator: str) -> None:
    # the column form a metric uses for a million rows gives the row form's estimate, every field
    from biasaudit.stats.disaggregate import mean, pooled_columns, proportion

    rng = np.random.default_rng(3)
    n = 400
    stimuli = {"clustered": [f"s{i % 37}" for i in range(n)], "one row per stimulus": [f"s{i}" for i in range(n)],
               "one stimulus": ["s0"] * n}[shape]
    cells = [f"c{i % 5}" for i in range(n)]
    values = [float(x) for x in rng.integers(0, 2, n)] if estimator == "proportion" else rng.normal(size=n).tolist()
    est = proportion if estimator == "proportion" else mean
    rows = [Obs(cell=c, cluster=k, value=v) for c, k, v in zip(cells, stimuli, values, strict=True)]
    assert pooled_columns(values, stimuli, cells, est).model_dump() == pooled(rows, est).model_dump()
