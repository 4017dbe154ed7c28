"""Prediction-powered inference against the authors' package, `ppi_py` (ppi-python 0.2.3,
github.com/aangelopoulos/ppi_py): on the same labelled and unlabelled inputs, the
project's point estimate, PPI++ weight and CLT standard error (stats/ppi.py `ppi_fit`)
give ppi_py's `ppi_mean_pointestimate`, `_calc_lam_glm` and `ppi_mean_ci` (alpha 0.05),
with the weight fixed at 1 (the original PPI) and tuned (PPI++). The report's interval is
the Wilson interval on the effective n of that estimate and standard error (checked
against statsmodels' Wilson interval on the same fractional count)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from biasaudit.stats.ppi import PPIFit, ppi_fit, ppi_mean

# CI installs the dev extra: there a missing reference is a failure, never a skip
ppi_py = (__import__("ppi_py") if os.environ.get("CI") == "true"
       else pytest.importorskip("ppi_py"))

CONFORMANCE = [
    {"check": "PPI mean (lambda = 1): point estimate and 95% CLT interval, binary labels, 4 designs",
     "source": "ppi_py.ppi_mean_ci(lam=1) and ppi_mean_pointestimate (ppi-python 0.2.3, Angelopoulos et al. 2023)",
     "tolerance": "1e-10"},
    {"check": "PPI++ mean (power-tuned lambda): weight, point estimate and 95% CLT interval, 4 designs",
     "source": "ppi_py.ppi_mean_ci(lam=None), ppi_py.ppi._calc_lam_glm (ppi-python 0.2.3, Angelopoulos, "
               "Duchi & Zrnic 2023)", "tolerance": "1e-10"},
    {"check": "reported PPI++ interval: Wilson score interval on the effective n theta(1 - theta) / se^2",
     "source": "statsmodels proportion_confint(method='wilson') on the fractional count", "tolerance": "1e-9"},
]

DESIGNS = [  # (rate, labelled n, unlabelled N, judge true-positive rate, false-positive rate, seed)
    (0.3, 100, 900, 0.8, 0.15, 1),
    (0.5, 40, 2000, 0.9, 0.1, 2),
    (0.15, 200, 800, 0.7, 0.05, 3),
    (0.3, 60, 300, 0.55, 0.45, 4),  # a weak judge: PPI++ leans on the humans
]


def _data(p: float, n: int, big_n: int, tpr: float, fpr: float, seed: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n + big_n) < p).astype(float)
    f = np.where(y == 1, rng.random(n + big_n) < tpr, rng.random(n + big_n) < fpr).astype(float)
    lab = np.zeros(n + big_n, dtype=bool)
    lab[:n] = True
    return f, lab, y


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.parametrize("lam", [1.0, None])
def test_point_estimate_and_clt_interval_equal_ppi_py(design: tuple[float, int, int, float, float, int],
                                                      lam: float | None) -> None:
    f, lab, y = _data(*design)
    fit = ppi_fit(f, lab, y, lam=lam)
    assert isinstance(fit, PPIFit)
    lo, hi = ppi_py.ppi_mean_ci(y[lab], f[lab], f[~lab], alpha=0.05, lam=lam)
    point = ppi_py.ppi_mean_pointestimate(y[lab], f[lab], f[~lab], lam=lam)
    z = norm.ppf(0.975)
    assert fit.theta == pytest.approx(float(np.ravel(point)[0]), abs=1e-10)
    assert fit.theta - z * fit.se == pytest.approx(float(np.ravel(lo)[0]), abs=1e-10)
    assert fit.theta + z * fit.se == pytest.approx(float(np.ravel(hi)[0]), abs=1e-10)
    if lam is None:  # the weight itself, from ppi_py's own function
        from ppi_py.ppi import _calc_lam_glm

        y2, f2, fu = y[lab][:, None], f[lab][:, None], f[~lab][:, None]
        pp = float(np.ravel(ppi_py.ppi_mean_pointestimate(y[lab], f[lab], f[~lab], lam=1))[0])
        want = _calc_lam_glm(y2 - pp, f2 - pp, fu - pp, np.eye(1), clip=True)
        assert fit.lams["all"] == pytest.approx(float(want), abs=1e-12)


@pytest.mark.parametrize("design", DESIGNS[:3])
def test_reported_interval_is_wilson_on_the_effective_n(design: tuple[float, int, int, float, float, int]) -> None:
    f, lab, y = _data(*design)
    fit = ppi_fit(f, lab, y)
    e = ppi_mean(f, lab, y, bounds=(0.0, 1.0))
    assert isinstance(fit, PPIFit) and e.method == "ppi++-wilson"
    n_eff = fit.theta * (1 - fit.theta) / fit.se**2
    lo, hi = proportion_confint(fit.theta * n_eff, n_eff, method="wilson")
    assert (e.value, e.ci_low, e.ci_high) == pytest.approx((fit.theta, lo, hi), abs=1e-9)
    assert math.isclose(e.ci_high - e.ci_low, hi - lo, rel_tol=1e-9)
