"""Histograms of values that differ only by float rounding (found by a run on the scripted
backend: equal-length sentence pairs gave -3.0 and -3.0000000000000004): numpy refused the
bins ("Too many bins for data range") and the report stopped with exit 70."""

from __future__ import annotations

import numpy as np
import pytest

from biasaudit.report.plots import HistogramData, MultiHistogramData, histogram, multi_histogram

ROUNDED = [-3.0, -3.0000000000000004, -3.0, -3.0000000000000004, -3.0]


def test_numpy_refuses_these_bins() -> None:
    # the failure the renderer must avoid, so this test keeps meaning something
    with pytest.raises(ValueError, match="Too many bins"):
        np.histogram(ROUNDED, bins=5)


@pytest.mark.parametrize("vals", [ROUNDED, [0.0] * 4, [1e12, 1e12 + 1e-4], [7.5]])
def test_histogram_draws_values_equal_up_to_rounding(vals: list[float]) -> None:
    svg = histogram(HistogramData(title="t", values=vals))
    assert "<svg" in svg


def test_multi_histogram_draws_values_equal_up_to_rounding() -> None:
    svg = multi_histogram(MultiHistogramData(title="t", series={"a": ROUNDED, "b": [-3.0]}))
    assert "<svg" in svg
