"""Power and minimum detectable deviation of a threshold verdict, before a run.

A verdict decides when the estimate's interval clears a bound (see verdicts/thresholds.py):
a `max` bound PASSes when the 1 - alpha interval's upper end is at or below it and FAILs
when its lower end is above it; an equivalence band PASSes when the 1 - 2 alpha interval
lies within it (two one-sided tests at alpha) and FAILs when the 1 - alpha interval lies
wholly outside it. Each is a set of one-sided tests, so the probability of a verdict at a
true value is a sum of one-sided rejection probabilities:

- PASS in a two-sided band [lo, hi]: P(upper end <= hi) + P(lower end >= lo) - 1 (exact
  for a normal estimate with a known standard error, since both events are half-lines of
  one statistic; a close approximation for t);
- FAIL: P(lower end > hi) + P(upper end < lo) (disjoint events).

One-sided rejection probabilities by estimator:

- a share (the Wilson interval, plain or on the design's effective n): exact. The Wilson
  interval inverts the score test, so on N rows its upper end is at or below b exactly
  when the count x <= N b - z sqrt(N b (1 - b)) (its lower end at or above b when
  x >= N b + z sqrt(N b (1 - b))), and the probability is a binomial tail,
  scipy.stats.binom at the true p: the probability of the counts whose own Wilson interval
  decides (tests/unit/stats/test_power_exact_shares.py enumerates every count through
  `verdicts.thresholds.judge` and gets the same numbers). The normal score-test formula it
  replaced gave 0.80 where the exact probability is 0.76 (issue 38). N is the stimuli with
  one row per stimulus, and with ICC 1 (every row of a stimulus alike: the design effect
  makes the interval count each stimulus once); with m rows and 0 < ICC < 1 it is the
  effective n, k m / (1 + (m - 1) ICC), rounded: there the count is not binomial and the
  interval estimates its own design effect from the stimuli, so the probability is an
  approximation (said so in the plan's note).

  Exact power is not monotone in n (the sawtooth of a discrete test: one more stimulus
  can move the critical count and lower the power). The stimuli planned are the smallest
  n from which every n' up to at least 2 n (and at least 64) reaches the target, so
  adding stimuli never loses it; `share_needed` also gives the first n that reaches it.
- a mean (t interval, or the cluster-robust t over stimuli, `cluster-t`): the one-sample t
  test on the stimulus means, `statsmodels.stats.power.TTestPower` (noncentral t).

Clustering: a stimulus asked under m prompt conditions gives m correlated rows. With an
intra-cluster correlation rho the variance of the pooled estimate is that of k*m
independent rows times the design effect 1 + (m - 1) rho, i.e. the per-stimulus variance
is sigma^2 (1 + (m - 1) rho) / m (Kish).

TOST power (equivalence PASS) has no statsmodels function for these estimators
(`power_ztost_prop` and `power_binom_tost` are for one unclustered binomial sample), so it
is the sum of the two one-sided probabilities above, at alpha each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

Kind = Literal["proportion", "mean"]
MAX_STIMULI = 10_000_000
"""Search limit of the sample-size search: a threshold that needs more is reported as such."""


@dataclass(frozen=True)
class Dispersion:
    """How noisy the pooled estimate is, per stimulus.

    A share on the scale [low, low + width] (a rate in [0, 1], a score in [0, 100]...):
    rows are Bernoulli at p = (value - low) / width, `factor` = design effect / m.
    A mean: `sd_cluster`, the standard deviation of the stimulus means (across stimuli)."""

    kind: Kind
    low: float = 0.0
    width: float = 1.0
    factor: float = 1.0
    """(1 + (m - 1) rho) / m: the per-stimulus variance over the row variance."""
    sd_cluster: float | None = None

    def sd(self, value: float) -> float:
        """Standard deviation of one stimulus's contribution at true `value`."""
        if self.kind == "mean":
            assert self.sd_cluster is not None
            return self.sd_cluster
        p = min(max((value - self.low) / self.width, 0.0), 1.0)
        return self.width * math.sqrt(p * (1 - p) * self.factor)

    def se(self, value: float, k: float) -> float:
        return self.sd(value) / math.sqrt(k)


def design_factor(m: float, icc: float) -> float:
    """(1 + (m - 1) rho) / m: the per-stimulus variance over the row variance, m rows a stimulus."""
    return (1 + (m - 1) * icc) / m


def side_probability(d: Dispersion, value: float, bound: float, k: float, alpha: float, below: bool,
                     strict: bool = False) -> float:
    """P(the one-sided limit at level 1 - alpha clears `bound`) at true `value` with k
    stimuli: the upper limit at or below it (`below`), or the lower limit at or above it
    (`strict`: strictly, as FAIL asks; it matters only for the discrete share)."""
    from scipy.stats import norm
    from statsmodels.stats.power import TTestPower
    if k < 2:
        return 0.0
    if d.kind == "mean":
        assert d.sd_cluster is not None
        if d.sd_cluster <= 0:
            return 1.0 if (value < bound if below else value > bound) else 0.0
        effect = (bound - value) / d.sd_cluster if below else (value - bound) / d.sd_cluster
        got = float(TTestPower().power(effect_size=effect, nobs=k, alpha=alpha, alternative="larger"))
        if math.isnan(got):  # scipy's noncentral t gives NaN far in the tails: the normal limit there
            got = float(norm.cdf(effect * math.sqrt(k) - norm.ppf(1 - alpha)))
        return got
    return float(share_side(d, value, bound, np.array([k], dtype=float), alpha, below, strict)[0])


def effective_rows(d: Dispersion, ks: np.ndarray) -> np.ndarray:
    """The binomial N of k stimuli: k / factor rows' worth (k m / deff), rounded, at least 1."""
    out: np.ndarray = np.maximum(1.0, np.rint(ks / d.factor))
    return out


def share_side(d: Dispersion, value: float, bound: float, ks: np.ndarray, alpha: float, below: bool,
               strict: bool = False) -> np.ndarray:
    """Exact P(the one-sided Wilson limit at level 1 - alpha clears `bound`) for each k of
    `ks` (see the module text): the count x ~ Binomial(N, p) on N = `effective_rows`,
    cleared when x <= N b - z sqrt(N b (1 - b)) (upper limit at or below b; `strict`: below)
    or x >= N b + z sqrt(...) (lower limit at or above; `strict`: above), b and p on the
    share's [0, 1] scale. A bound at 0 or 1 (or beyond) is decided from the interval
    itself: Wilson's upper limit is above 0 at every count, its lower limit below 1."""
    from scipy.stats import binom, norm
    z = float(norm.ppf(1 - alpha))
    p = min(max((value - d.low) / d.width, 0.0), 1.0)
    b = (bound - d.low) / d.width
    n = effective_rows(d, ks)
    if b <= 0.0 or b >= 1.0:
        out = np.zeros_like(n)
        if below:  # the upper limit: always <= 1, never <= 0; < 1 unless every row counts
            if b > 1.0 or (b == 1.0 and not strict):
                out[:] = 1.0
            elif b == 1.0:
                out = binom.cdf(n - 1, n, p)
        else:  # the lower limit: always >= 0, never >= 1; > 0 once one row counts
            if b < 0.0 or (b == 0.0 and not strict):
                out[:] = 1.0
            elif b == 0.0:
                out = binom.sf(0, n, p)
        return np.asarray(out, dtype=float)
    half = z * np.sqrt(n * b * (1 - b))
    if below:
        crit = n * b - half
        x_max = np.ceil(crit) - 1 if strict else np.floor(crit)
        return np.asarray(binom.cdf(x_max, n, p), dtype=float)
    crit = n * b + half
    x_min = np.floor(crit) + 1 if strict else np.ceil(crit)
    return np.asarray(binom.sf(x_min - 1, n, p), dtype=float)


@dataclass(frozen=True)
class Rule:
    """A threshold as the power computation sees it: its band and its kind."""

    low: float | None
    high: float | None
    equivalence: bool = False
    alpha: float = 0.05
    """1 - the estimates' interval level."""

    def inside(self, value: float) -> bool:
        return (self.low is None or value > self.low) and (self.high is None or value < self.high)

    def outside(self, value: float) -> bool:
        return (self.low is not None and value < self.low) or (self.high is not None and value > self.high)


def p_pass(rule: Rule, d: Dispersion, value: float, k: float) -> float:
    """Probability of PASS at true `value` with k stimuli."""
    a = rule.alpha if rule.equivalence else rule.alpha / 2  # TOST: each side at alpha
    sides = []
    if rule.high is not None:
        sides.append(side_probability(d, value, rule.high, k, a, below=True))
    if rule.low is not None:
        sides.append(side_probability(d, value, rule.low, k, a, below=False))
    return max(0.0, sum(sides) - (len(sides) - 1))


def p_fail(rule: Rule, d: Dispersion, value: float, k: float) -> float:
    """Probability of FAIL at true `value` with k stimuli (the 1 - alpha interval wholly outside)."""
    a = rule.alpha / 2
    out = 0.0
    if rule.high is not None:
        out += side_probability(d, value, rule.high, k, a, below=False, strict=True)
    if rule.low is not None:
        out += side_probability(d, value, rule.low, k, a, below=True, strict=True)
    return min(out, 1.0)


def p_decide(rule: Rule, d: Dispersion, value: float, k: float) -> tuple[str, float] | None:
    """(the verdict a true `value` should get, its probability at k stimuli); None on a bound."""
    if rule.inside(value):
        return "PASS", p_pass(rule, d, value, k)
    if rule.outside(value):
        return "FAIL", p_fail(rule, d, value, k)
    return None


def p_decide_shares(rule: Rule, d: Dispersion, value: float, ks: np.ndarray) -> np.ndarray | None:
    """`p_decide`'s probability for a share at every k of `ks` at once (exact); None on a bound."""
    def side(bound: float, a: float, below: bool, strict: bool) -> np.ndarray:
        return share_side(d, value, bound, ks, a, below, strict)

    if rule.inside(value):
        a = rule.alpha if rule.equivalence else rule.alpha / 2
        total = np.zeros(len(ks))
        sides = 0
        if rule.high is not None:
            total += side(rule.high, a, True, False)
            sides += 1
        if rule.low is not None:
            total += side(rule.low, a, False, False)
            sides += 1
        out: np.ndarray = np.maximum(0.0, total - (sides - 1))
    elif rule.outside(value):
        out = np.zeros(len(ks))
        if rule.high is not None:
            out += side(rule.high, rule.alpha / 2, False, True)
        if rule.low is not None:
            out += side(rule.low, rule.alpha / 2, True, True)
        out = np.minimum(out, 1.0)
    else:
        return None
    out[ks < 2] = 0.0
    return out


EXACT_SHARE_LIMIT = 2_000_000
"""The largest number of stimuli the exact share search scans (one array of this size); a
share that needs more is found by bisection on the same exact probability, where one
stimulus more or less moves it by far less than the target's precision."""


@dataclass(frozen=True)
class ShareNeed:
    """The exact sample-size search of a share (see the module text)."""

    needed: int | None
    """The smallest n from which every n' to `checked` reaches the target (None: not within the limit)."""
    first: int | None
    """The smallest n that reaches the target at all (the sawtooth may drop below it again)."""
    checked: int
    """The largest n scanned."""


def share_needed(rule: Rule, d: Dispersion, value: float, target: float = 0.8) -> ShareNeed:
    """The exact search for a share: scan n = 2..K with the exact power, K doubled until the
    answer n has every n' in [n, max(2 n, 64)] at or above the target."""
    top = 64
    while True:
        ks = np.arange(2, top + 1, dtype=float)
        pw = p_decide_shares(rule, d, value, ks)
        if pw is None:
            return ShareNeed(None, None, top)
        ok = pw >= target
        bad = np.nonzero(~ok)[0]
        first = int(ks[int(np.argmax(ok))]) if ok.any() else None
        need = 2 if bad.size == 0 else (int(ks[bad[-1] + 1]) if bad[-1] + 1 < ks.size else None)
        if need is not None and top >= max(2 * need, 64):
            return ShareNeed(need, first, top)
        if top >= EXACT_SHARE_LIMIT:
            return ShareNeed(None, first, top)
        top = min(top * 4, EXACT_SHARE_LIMIT)


def stimuli_needed(rule: Rule, d: Dispersion, value: float, target: float = 0.8) -> int | None:
    """The fewest stimuli at which the right verdict for `value` has probability >= target
    (a share: exactly, and from there on; see `share_needed`); None when no count up to
    MAX_STIMULI reaches it (e.g. the value on a bound)."""
    if d.kind == "proportion":
        got = share_needed(rule, d, value, target)
        if got.needed is not None or got.checked < EXACT_SHARE_LIMIT:
            return got.needed
    first = p_decide(rule, d, value, 2)
    if first is None:
        return None
    if first[1] >= target:
        return 2

    def ok(k: int) -> bool:
        got = p_decide(rule, d, value, k)
        return got is not None and got[1] >= target

    hi = 4
    while not ok(hi):
        if hi >= MAX_STIMULI:
            return None
        hi = min(hi * 2, MAX_STIMULI)
    lo = hi // 2
    while hi - lo > 1:  # power rises with k: bisect on the first k that reaches the target
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class Detectable:
    """Minimum detectable deviations at a given n, on the estimate's scale."""

    fail_beyond: dict[str, float | None]
    """Side ('low' / 'high') -> how far beyond the bound the true value must lie for FAIL
    with the target probability (None: not reachable within the estimate's range)."""
    pass_inside: float | None
    """How far inside every bound (the same distance from each) the true value must lie
    for PASS with the target probability (None: not reachable, e.g. the band is too narrow)."""


def detectable(rule: Rule, d: Dispersion, k: float, target: float = 0.8,
               limits: tuple[float, float] | None = None) -> Detectable:
    """The minimum detectable deviations at k stimuli (see `Detectable`). `limits`: the
    range the estimate can take (a share's scale); a mean is searched to 20 standard errors
    (any target power below 1 - 1e-40 is reached well inside)."""
    from scipy import optimize
    ref = rule.high if rule.high is not None else rule.low
    assert ref is not None
    span = 20 * d.se(ref, k) if d.kind == "mean" else d.width
    lo_lim, hi_lim = limits if limits is not None else (-math.inf, math.inf)

    def solve(f: Callable[[float], float], top: float) -> float | None:
        """The smallest x in [0, top] with f(x) >= target, f rising in x."""
        if top <= 0 or f(top) < target:
            return None
        if f(0.0) >= target:
            return 0.0
        return float(optimize.brentq(lambda x: f(x) - target, 0.0, top, xtol=1e-10))

    fail: dict[str, float | None] = {}
    high, low = rule.high, rule.low
    if high is not None:
        fail["high"] = solve(lambda x: p_fail(rule, d, high + x, k), min(span, hi_lim - high))
    if low is not None:
        fail["low"] = solve(lambda x: p_fail(rule, d, low - x, k), min(span, low - lo_lim))
    if low is not None and high is not None:
        # the same distance inside each bound: PASS must reach the target at both ends
        half = (high - low) / 2
        pass_in = solve(lambda x: min(p_pass(rule, d, low + x, k), p_pass(rule, d, high - x, k)), half)
    elif high is not None:
        pass_in = solve(lambda x: p_pass(rule, d, high - x, k), min(span, high - lo_lim))
    else:
        assert low is not None
        pass_in = solve(lambda x: p_pass(rule, d, low + x, k), min(span, hi_lim - low))
    return Detectable(fail_beyond=fail, pass_inside=pass_in)


__all__ = ["EXACT_SHARE_LIMIT", "MAX_STIMULI", "Detectable", "Dispersion", "Rule", "ShareNeed", "design_factor",
           "detectable", "effective_rows", "p_decide", "p_decide_shares", "p_fail", "p_pass", "share_needed",
           "share_side", "side_probability", "stimuli_needed"]
