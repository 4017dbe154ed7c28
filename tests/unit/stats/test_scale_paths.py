"""The statistics at scale (issue 42): a per-response bootstrap of many rows holds bounded
memory, and the grouped coincidence matrix of Krippendorff's alpha is the one the
unit-by-unit definition gives, to the last bit (the golden summary depends on it)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from biasaudit.stats import cluster_bootstrap, krippendorff_alpha_nominal
from biasaudit.stats.agreement import coincidences


def _by_hand(values: np.ndarray, seed: int, resamples: int) -> tuple[float, float]:
    """The row-index bootstrap as written in any textbook: draw n row indices per
    resample (1,000 resamples per draw, as the module batches them), take the mean."""
    rng = np.random.default_rng(seed)
    n = values.size
    boot = np.concatenate([values[rng.integers(0, n, size=(min(1000, resamples - i), n))].mean(axis=1)
                           for i in range(0, resamples, 1000)])
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return float(lo), float(hi)


def test_singleton_cluster_bootstrap_equals_the_row_index_bootstrap_by_hand() -> None:
    # 5,000 rows: a batch of 1,000 resamples is drawn in slices (memory bound); the
    # interval is still the textbook one, bit for bit (integer values: exact sums)
    values = np.random.default_rng(7).integers(-1, 2, 5_000).astype(float)
    est = cluster_bootstrap(values, list(range(values.size)), seed=3, n_resamples=2_000, count_draw_above=None)
    # clusters are numbered in the order of their labels as text ("0", "1", "10", ...)
    order = sorted(range(values.size), key=str)
    assert (est.ci_low, est.ci_high) == _by_hand(values[order], 3, 2_000)
    assert est.value == pytest.approx(values.mean(), abs=1e-15)


def test_bootstrap_of_many_rows_holds_bounded_memory() -> None:
    # 60,000 singleton clusters, one batch of 1,000 resamples: drawn whole, the indices,
    # their counts and the float weights are 480 MB each; in slices, a few tens of MB
    values = (np.arange(60_000) % 3 == 0).astype(float)
    tracemalloc.start()
    try:
        est = cluster_bootstrap(values, list(range(values.size)), seed=1, n_resamples=1_000, count_draw_above=None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert est.ci_low is not None and est.ci_low < 1 / 3 < est.ci_high
    assert peak < 200 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def test_clustered_integer_bootstrap_equals_the_cluster_index_bootstrap_by_hand() -> None:
    # clusters of unequal size with whole-number sums: the lookup path (no weight matrix)
    # gives the textbook cluster bootstrap bit for bit: draw g cluster indices, divide the
    # drawn clusters' summed values by their summed sizes
    rng = np.random.default_rng(11)
    clusters = rng.integers(0, 400, 6_000)
    values = rng.integers(0, 2, 6_000).astype(float)
    est = cluster_bootstrap(values, clusters.tolist(), seed=4, n_resamples=3_000)
    labels = sorted({str(c) for c in clusters})
    index = {lab: i for i, lab in enumerate(labels)}
    which = np.array([index[str(c)] for c in clusters])
    sums = np.bincount(which, weights=values)
    sizes = np.bincount(which).astype(float)
    draw = np.random.default_rng(4)
    boot = np.concatenate([sums[i].sum(axis=1) / sizes[i].sum(axis=1)
                           for i in (draw.integers(0, len(labels), size=(1_000, len(labels))) for _ in range(3))])
    assert (est.ci_low, est.ci_high) == tuple(float(x) for x in np.quantile(boot, [0.025, 0.975]))


def _coincidences_unit_by_unit(units: list[list[str]], cats: list[str]) -> np.ndarray:
    """Krippendorff (2011), section C: each unit adds its pairable values' coincidences,
    (n_ck n_uk - [c = k] n_uc) / (m_u - 1)."""
    index = {c: i for i, c in enumerate(cats)}
    o = np.zeros((len(cats), len(cats)))
    for u in units:
        counts = np.zeros(len(cats))
        for v in u:
            counts[index[v]] += 1
        o += (np.outer(counts, counts) - np.diag(counts)) / (len(u) - 1)
    return o


@pytest.mark.parametrize("raters", [2, 3, 4, 5])
def test_grouped_coincidences_equal_the_unit_by_unit_sum_bit_for_bit(raters: int) -> None:
    rng = np.random.default_rng(raters)
    labels = ["E", "N", "D", "R"]
    units = [[labels[i] for i in rng.integers(0, 4, raters)] for _ in range(3_000)]
    cats = sorted({v for u in units for v in u})
    assert np.array_equal(coincidences(units, cats), _coincidences_unit_by_unit(units, cats))


def test_krippendorff_worked_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", nominal example: alpha = 0.743
    data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
            [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
    alpha = krippendorff_alpha_nominal([[row[u] for row in data] for u in range(12)])
    assert alpha == pytest.approx(0.743, abs=5e-4)
