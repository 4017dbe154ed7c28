"""Group-sequential boundaries from Lan-DeMets alpha-spending functions, for runs that look
at their thresholds every few stimuli (`runtime.sequential`).

A run that judges its thresholds at looks k = 1..K (information fractions t_k = stimuli
seen / stimuli planned) and stops at the first decided look would, at the plain 95% level
at every look, decide a threshold whose true value sits exactly on the bound far more
often than 5% of the time (about 14% over five looks). Lan and DeMets (1983) spend the
error rate alpha over the looks instead: a spending function alpha*(t), increasing from 0
to alpha at t = 1, gives the share that may be spent by information t (for a two-sided
test, the sum of the two sides' one-sided functions at alpha / 2 each), and the two-sided
boundary c_k of look k is the one whose crossing probability, given no crossing before,
is alpha*(t_k) - alpha*(t_{k-1}) under the null. The Z statistics of one estimator at
the looks are a Brownian motion in the information (Z_k ~ N(0, 1), corr(Z_i, Z_j) =
sqrt(t_i / t_j) for i < j), so the boundaries are computed exactly from that multivariate
normal, by the recursive numerical integration of Armitage, McPherson and Rowe (1969) as
Jennison and Turnbull (2000, ch. 19) give it. A look's *nominal level* 1 - 2(1 - Phi(c_k))
is the level of its repeated confidence interval: a threshold is decided at look k when
the interval at that level decides it.

Written by hand because no well-kept Python package provides Lan-DeMets boundaries:
statsmodels and scipy do not; on PyPI `gsdesign` (0.1.x, "experimental", alpha status)
ports only the integration grid of R's gsDesign, without spending functions or a
boundary search. The tests check these boundaries against
`scipy.stats.multivariate_normal.cdf` and published values
(tests/conformance/test_sequential_boundaries.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Spending = Literal["obrien_fleming", "pocock"]

# A look with nothing to spend (the increment underflows to 0) has an infinite boundary.
# Any positive increment gets its finite boundary, as gsDesign and rpact give it, however
# tiny (the first of 10 O'Brien-Fleming looks at 0.01 spends 1.4e-18: boundary 8.799); a
# look whose nominal alpha is below double precision (about 1e-16) has a level that rounds
# to 1 and cannot decide (`verdicts.sequential`).
_NOTHING = 0.0
# Beyond this many standard deviations the null density is below 1e-20: the grid of a
# look with an infinite boundary stops here.
_TAIL = 9.5
# Simpson's rule on this many points per look: the boundaries agree with scipy's
# multivariate normal to better than 1e-5 in the crossing probability (tests).
_POINTS = 801


def spent(spending: Spending, t: float | np.ndarray, alpha: float) -> np.ndarray:
    """alpha*(t): the error rate a two-sided design may have spent by information t, the
    sum of what its two sides spend. Each side spends alpha / 2 with Lan and DeMets'
    one-sided function, as R's gsDesign (`sfLDOF`, `sfLDPocock` with `test.type = 2`),
    rpact (`asOF`, `asP` with `sided = 2`) and ldbounds do for a symmetric two-sided test.

    `obrien_fleming`: each side 2 - 2 Phi(z_{alpha/4} / sqrt(t)), so the design spends
    4 - 4 Phi(z_{alpha/4} / sqrt(t)) (almost nothing early, nearly the whole alpha at the
    end). Not 2 - 2 Phi(z_{alpha/2} / sqrt(t)): that is the one-sided function applied to
    the two-sided alpha, which spends more early (5 equal looks at 0.05: 4.383 ... 2.064
    instead of the published 4.877 ... 2.031). `pocock`: each side (alpha / 2)
    ln(1 + (e - 1) t), so the design spends alpha ln(1 + (e - 1) t) (linear in alpha, so the
    per-side and the whole-alpha readings coincide).
    """
    from scipy.stats import norm
    tt = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    if spending == "obrien_fleming":
        with np.errstate(divide="ignore"):
            z = norm.isf(alpha / 4) / np.sqrt(tt)
        return np.asarray(2 * (2 * norm.sf(z)))  # two sides, each 2 (1 - Phi(z_{alpha/4} / sqrt t))
    if spending == "pocock":
        return np.asarray(2 * (alpha / 2 * np.log1p((math.e - 1) * tt)))
    raise ValueError(f"unknown spending function {spending!r}")


@dataclass(frozen=True)
class Boundaries:
    """Two-sided boundaries of a design: one entry per look."""

    fractions: tuple[float, ...]
    """Information fraction t_k of each look (stimuli seen / planned)."""
    z: tuple[float, ...]
    """|Z| at or beyond which look k decides (inf: the look cannot decide)."""
    spent: tuple[float, ...]
    """alpha*(t_k): the error rate spent up to and including look k."""
    alpha: float
    spending: Spending

    @property
    def nominal_alpha(self) -> tuple[float, ...]:
        """Two-sided nominal alpha of each look, 2 (1 - Phi(c_k)): one minus the level of
        its repeated confidence interval."""
        from scipy.stats import norm
        return tuple(float(2 * norm.sf(c)) if math.isfinite(c) else 0.0 for c in self.z)


def _simpson(lo: float, hi: float, n: int = _POINTS) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(lo, hi, n)
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return x, w * (hi - lo) / (3 * (n - 1))


@dataclass(frozen=True)
class _Continuation:
    """The sub-density of Z_k on the continuation region |z| < c_k (no crossing so far),
    on a Simpson grid: `x` the points, `mass` density times weight."""

    t: float
    x: np.ndarray
    mass: np.ndarray


def _exit_prob(c: float, tk: float, prev: _Continuation | None) -> float:
    """P(no crossing before look k, |Z_k| >= c) under the null."""
    from scipy.stats import norm
    if prev is None:
        return float(2 * norm.sf(c))
    sd = math.sqrt(tk - prev.t)
    mean = prev.x * math.sqrt(prev.t)  # the score S_{k-1} = Z_{k-1} sqrt(t_{k-1})
    b = c * math.sqrt(tk)
    return float(prev.mass @ (norm.sf((b - mean) / sd) + norm.cdf((-b - mean) / sd)))


def _solve(target: float, tk: float, prev: _Continuation | None) -> float:
    """The boundary whose exit probability is `target` (it falls from its value at 0 to 0)."""
    from scipy import optimize
    if _exit_prob(0.0, tk, prev) <= target:
        return 0.0
    hi = 1.0
    while _exit_prob(hi, tk, prev) > target and hi < 40:
        hi *= 2
    return float(optimize.brentq(lambda c: _exit_prob(c, tk, prev) - target, 0.0, hi, xtol=1e-10, rtol=1e-12))


def _continue(c: float, tk: float, prev: _Continuation | None) -> _Continuation:
    """The sub-density of Z_k on |z| < c (the integral of the previous one against the
    normal transition of the score from t_{k-1} to t_k)."""
    from scipy.stats import norm
    edge = min(c, _TAIL)
    x, w = _simpson(-edge, edge)
    if prev is None:
        dens = norm.pdf(x)
    else:
        sd = math.sqrt(tk - prev.t)
        kern = norm.pdf((x[:, None] * math.sqrt(tk) - prev.x[None, :] * math.sqrt(prev.t)) / sd) * math.sqrt(tk) / sd
        dens = kern @ prev.mass
    return _Continuation(t=tk, x=x, mass=dens * w)


def boundaries(fractions: Sequence[float], alpha: float, spending: Spending) -> Boundaries:
    """Lan-DeMets two-sided boundaries at increasing information fractions ending at 1
    (the last look spends what is left of alpha)."""
    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or len(t) == 0 or np.any(np.diff(t) <= 0) or t[0] <= 0 or not math.isclose(t[-1], 1.0):
        raise ValueError("information fractions must increase strictly from above 0 to 1")
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")
    cum = spent(spending, t, alpha)
    cum[-1] = alpha
    z: list[float] = []
    prev: _Continuation | None = None
    for k, tk in enumerate(t):
        target = float(cum[k] - (cum[k - 1] if k else 0.0))
        c = math.inf if target <= _NOTHING else _solve(target, float(tk), prev)
        z.append(c)
        prev = _continue(c, float(tk), prev)
    return Boundaries(fractions=tuple(float(v) for v in t), z=tuple(z), spent=tuple(float(v) for v in cum),
                      alpha=alpha, spending=spending)


def look_sizes(planned: int, every: int, max_looks: int | None = None) -> list[int]:
    """The stimulus counts at which a run of `planned` stimuli looks: every `every`
    stimuli, the last look at `planned`; with `max_looks`, the looks after the
    (max_looks - 1)-th are merged into the last."""
    if planned <= 0 or every <= 0:
        raise ValueError("planned stimuli and look_every must be positive")
    sizes = list(range(every, planned, every)) + [planned]
    if max_looks is not None and len(sizes) > max_looks:
        sizes = sizes[:max_looks - 1] + [planned]
    return sizes


__all__ = ["Boundaries", "Spending", "boundaries", "look_sizes", "spent"]
