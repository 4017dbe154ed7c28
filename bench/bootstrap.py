"""Bootstrap speed: 10,000 resamples of a 10,000-row binary table (issue 3 target: < 1 s)."""

from __future__ import annotations

import time

import numpy as np

from biasaudit.stats import bootstrap, cluster_bootstrap


def run() -> list[tuple[str, float]]:
    rng = np.random.default_rng(0)
    table = (rng.random((10_000, 2)) < [0.3, 0.6]).astype(float)

    def union(v: np.ndarray, w: np.ndarray) -> np.ndarray:
        return (w @ (v[:, 0] + v[:, 1] - v[:, 0] * v[:, 1])) / w.sum(axis=1)

    rows = []
    for label, fn in (
        ("binary mean, BCa", lambda: bootstrap(table[:, 0], n_resamples=10_000, seed=0)),
        ("2-column table union, BCa", lambda: bootstrap(table, union, n_resamples=10_000, seed=0)),
        ("cluster (2,000 clusters), percentile", lambda: cluster_bootstrap(table[:, 0], np.arange(10_000) // 5, n_resamples=10_000, seed=0)),
        ("continuous 10,000 rows, percentile", lambda: bootstrap(rng.normal(size=10_000), method="percentile", n_resamples=10_000, seed=0)),
    ):
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        rows.append((label, best))
    return rows
