"""Integer `Codes` for clusters and cells (issue 42: the measure stage holds a million rows
as arrays) give every clustered estimator the same number, bit for bit, as the labels'
text: the codes are numbered in the labels' sorted order, which is the order the
estimators group the text in (np.unique, sorted)."""

from __future__ import annotations

import numpy as np
import pytest

from biasaudit.stats import cell_spread, cluster_bootstrap, eta_squared, wilson_clustered
from biasaudit.stats.codes import Codes
from biasaudit.stats.disaggregate import mean, pooled_columns, proportion
from biasaudit.stats.means import mean_t_clustered


def _coded(labels: list[str]) -> Codes:
    names = sorted(set(labels))
    index = {n: i for i, n in enumerate(names)}
    return Codes(np.array([index[x] for x in labels], dtype=np.int32), names)


@pytest.fixture
def rows() -> tuple[np.ndarray, list[str], list[str]]:
    rng = np.random.default_rng(7)
    n = 3_000
    # ids whose text order is not their numeric order ("s10" < "s2"): the trap the codes avoid
    stimuli = [f"s{i}" for i in rng.integers(0, 120, n)]
    cells = [f"task={t}" for t in rng.integers(0, 14, n)]
    values = (rng.random(n) < 0.3).astype(np.float64)
    return values, stimuli, cells


def test_codes_give_the_same_estimates_as_the_labels(rows: tuple[np.ndarray, list[str], list[str]]) -> None:
    values, stimuli, cells = rows
    s, c = _coded(stimuli), _coded(cells)
    assert wilson_clustered(values, s) == wilson_clustered(values.tolist(), stimuli)
    assert mean_t_clustered(values - 0.5 * values[::-1], s) == mean_t_clustered((values - 0.5 * values[::-1]).tolist(),
                                                                               stimuli)
    assert cluster_bootstrap(values, s, seed=3) == cluster_bootstrap(values.tolist(), stimuli, seed=3)
    assert eta_squared(values, c) == eta_squared(values.tolist(), cells)
    assert cell_spread(c, s, values, seed=1) == cell_spread(cells, stimuli, values.tolist(), seed=1)
    for est in (proportion, mean):
        assert pooled_columns(values, s, c, est) == pooled_columns(values.tolist(), stimuli, cells, est)


def test_unclustered_rows_keep_their_labels() -> None:
    values = np.array([1.0, 0.0, 1.0])
    labels = ["a", "b", "c"]
    seen: list[tuple[str, str]] = []

    def est(rs):  # type: ignore[no-untyped-def]
        seen.extend((r.cell, r.cluster) for r in rs)
        return proportion(rs)

    pooled_columns(values, _coded(labels), _coded(["x", "y", "x"]), est)
    assert seen == [("x", "a"), ("y", "b"), ("x", "c")]


def test_names_must_be_sorted() -> None:
    with pytest.raises(ValueError, match="sorted"):
        Codes(np.array([0, 1]), ["b", "a"])
