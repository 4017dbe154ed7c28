"""Impact ratios: each group's selection (positive) rate over the rate of the most
favoured group, with the four-fifths flag, as NYC Local Law 144 bias audits report them.

The interval is Katz's log method for the ratio of two independent proportions (Katz et
al. 1978): log(p_g / p_ref) +- z * sqrt((1 - p_g) / (n_g p_g) + (1 - p_ref) / (n_ref p_ref)),
i.e. 1/x_g - 1/n_g + 1/x_ref - 1/n_ref in counts; statsmodels `Table2x2.riskratio_confint`
computes the same on one 2x2 table (the tests check it against that). It is written out
here because statsmodels takes integer tables, not effective counts, and is not vectorised.

Clustering. When a group's rows come in clusters (a stimulus asked under several prompt
conditions), each group's counts are its effective counts: n_eff from Kish's design effect
of the cluster-robust (sandwich) variance of the group's rate (`stats.proportions.effective_n`,
the same n_eff the group contrasts and the pooled Wilson intervals use), x_eff = p * n_eff.
Katz's variance on effective counts is the delta-method variance of each log-rate,
Var_cluster(p) / p^2, so the interval is the Katz interval with a cluster-robust variance of
each log-rate. With one row per stimulus it is Katz's interval exactly.

Zeros. A group with rate 0 has ratio 0; its log is undefined, so (as statsmodels'
`shift_zeros`) 0.5 is added to each of the four counts of the two groups' 2x2 table
(selected / not selected in each group) whenever one of them is 0, and the interval is
[0, upper bound of the shifted table]. The same shift applies when a group is selected
every time (a zero "not selected" count). A most favoured rate of 0 (no group selected at
all) makes every ratio undefined: 0 / 0.

The reference. The most favoured group is the one with the highest rate among the groups
with at least `min_n` stimuli (a small cell at 100% would otherwise become everyone's
reference); when no group is that large, among all groups, with a note. The reference is
chosen after looking at the rates and each group's interval is conditional on it (it
treats the reference rate as estimated, not as the maximum of several: a per-pair interval,
the one an LL144 table reports beside each category). Small cells (fewer than `min_n`
stimuli) are reported with a note, never dropped, and never given the four-fifths flag on
their own.

The lowest ratio (`ImpactFamily.lowest`) is simultaneous. It is min_g p_g / max_h p_h over
the G groups that may take part (at least `min_n` stimuli, not excluded): the reference is
the highest observed rate and the lowest group the smallest, both picked from the data, so
the ratio reported is the worst of all G(G-1)/2 pairs, not of one pair fixed in advance.
(G - 1 comparisons would be right only for a reference named before the data were seen.)
With the per-pair 95% interval, a `min: 0.8` threshold FAILs 6-10% of the time when the true
lowest ratio is 0.8 (issue 38, item 5), against the nominal one-sided 2.5%.

Its interval is the Katz interval of that pair, log r +- c se, with the critical value c of
the least favourable configuration instead of 1.96. A FAIL on a lower bound b says some
pair's ratio is below b. Under "every ratio is at least b", a FAIL is most likely when the
groups split into a set L of k groups whose rate is exactly b times that of the other G - k
(set H): a FAIL is then (to first order, with equal variances of the log-rates) the event
max_H Z - min_L Z > c sqrt(2) for G independent standard normals Z (moving a group between
the two levels only lowers it; a pair with a true ratio above b contributes less, and the
opposite direction of a pair needs a miss by 2 |log b| more). `lowest_critical` solves
sup_k P(max of G - k normals - min of k normals > c sqrt 2) = alpha / 2 by quadrature, so
the FAIL rate is alpha / 2 in the least favourable configuration of that normal model and
below it elsewhere (c = 1.96 for G = 2, 2.587 for 5 groups, 3.024 for 10). With binomial
counts it is lower still (1.65% for the split of 5 groups of 100 at 0.4 / 0.5): Katz's
interval on estimated variances is conservative for the smallest rate (2.2% for two groups). Each pair's own standard error is
used, as Tukey-Kramer does with unequal sizes. Bonferroni over the G(G-1)/2 pairs (z at
alpha / G(G-1), 2.807 for 5 groups) is valid too but needlessly wide: 0.4-0.5% FAILs on
the bound with 5 groups, where this gives 1.2-1.7%; Bonferroni over G - 1 (2.498) is too
narrow where two or more groups sit at the bound (the k = 2 split of 5 groups). The
interval at 1 - 2 alpha beside it (`Estimate.tost_interval`, for equivalence thresholds) is
the same with c solved at alpha. The headline `lowest` of several categorisations (a field,
another field, their intersection) splits alpha between them (Bonferroni over the F
categorisations: c at alpha / 2F). Simulated in tests/unit/stats/test_impact_lowest.py.

Excluded categories (`exclude_below_share`, 6 RCNY 5-301(d): an independent auditor may
exclude a category that represents less than 2% of the data from the impact-ratio
calculations, and must then report its number of applicants and its selection or scoring
rate): such a group keeps its rate, gets no ratio, is never the reference nor the lowest,
and does not count in G.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from biasaudit.records.estimate import Estimate
from biasaudit.stats.contrasts import GroupRate, group_rate

FOUR_FIFTHS = 0.8
"""The four-fifths rule: an impact ratio below 0.8 is evidence of adverse impact (EEOC
Uniform Guidelines, 29 CFR 1607.4(D)); LL144 audits report the ratio beside it."""

MIN_N = 30
"""Default smallest group (stimuli) judged on its own: below it a group is reported with a
note and never flagged (the normal approximation of the log ratio needs some size)."""

KATZ = "katz-log"
KATZ_CLUSTERED = "katz-log-design-effect"
SIMULTANEOUS = "-simultaneous"
"""Suffix of the method of a `lowest` estimate whose interval uses the critical value of
the least favourable configuration of its groups (`lowest_critical`; see the module text)."""


@lru_cache(maxsize=256)
def lowest_critical(groups: int, alpha: float) -> float:
    """The critical value c of the lowest of `groups` groups' pairwise log ratios: the
    largest over k = 1 .. groups - 1 of the c with P(max of groups - k standard normals -
    min of k others > c sqrt 2) = `alpha` (one-sided). 1.96 for two groups at 0.025."""
    from scipy import integrate, optimize
    from scipy.stats import norm
    if groups < 2:
        return float(norm.isf(alpha))

    # P(max_H - min_L > t) = 1 - int k phi(u) S(u)^(k-1) Phi(u + t)^(G-k) du, by Simpson's rule
    # on a fine grid (the integrand is smooth and below 1e-18 outside [-9, 9]; this agrees with
    # scipy's quad to 1e-9 and takes microseconds instead of seconds)
    u = np.linspace(-9.0, 9.0, 3601)
    dens = norm.pdf(u)
    surv = norm.sf(u)

    def exceed(t: float, k: int) -> float:
        f = k * dens * surv ** (k - 1) * norm.cdf(u + t) ** (groups - k)
        return 1.0 - float(integrate.simpson(f, x=u))

    def solve(k: int) -> float:
        return float(optimize.brentq(lambda c: exceed(c * math.sqrt(2.0), k) - alpha, 0.1, 12.0, xtol=1e-10))

    return max(solve(k) for k in range(1, groups // 2 + 1))


def katz_interval(x1: np.ndarray | float, n1: np.ndarray | float, x0: np.ndarray | float, n0: np.ndarray | float,
                  level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ratio, low, high) of (x1/n1) / (x0/n0) by Katz's log method, element-wise.

    Counts may be effective (non-integer). Where any of x1, n1 - x1, x0, n0 - x0 is 0,
    0.5 is added to all four for the interval (the ratio stays the unshifted one); where
    x1 is 0 the low end is 0. Where x0 is 0 everything is NaN (0 / 0 or x / 0)."""
    from scipy.stats import norm
    x1a, n1a, x0a, n0a = (np.asarray(v, dtype=np.float64) for v in (x1, n1, x0, n0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (x1a / n1a) / (x0a / n0a)
        zero = (x1a <= 0) | (n1a - x1a <= 0) | (x0a <= 0) | (n0a - x0a <= 0)
        s = np.where(zero, 0.5, 0.0)
        a, b, c, d = x1a + s, n1a - x1a + s, x0a + s, n0a - x0a + s
        log_rr = np.log((a / (a + b)) / (c / (c + d)))
        se = np.sqrt(1 / a - 1 / (a + b) + 1 / c - 1 / (c + d))
        z = float(norm.ppf(1 - (1 - level) / 2))
        lo = np.where(x1a <= 0, 0.0, np.exp(log_rr - z * se))
        hi = np.exp(log_rr + z * se)
    bad = ~(x0a > 0)
    return (np.where(bad, np.nan, ratio), np.where(bad, np.nan, lo), np.where(bad, np.nan, hi))


@dataclass(frozen=True)
class ImpactRow:
    """One group: its rate, its impact ratio, and the four-fifths flag."""

    group: str
    rate: GroupRate
    selected: int
    """Rows selected (positive) in the group."""
    ratio: Estimate
    small: bool
    """Fewer than `min_n` stimuli: reported, not flagged."""
    reference: bool
    flag: str
    """`below 0.8`, `` (at or above), `small cell`, `undefined`, `reference` or `excluded`."""
    excluded: bool = False
    """Under `exclude_below_share` of the data (LL144's small-category rule): its rate is
    reported, its ratio is not calculated."""
    share: float | None = None
    """The group's share of the family's stimuli (set when `exclude_below_share` is)."""


@dataclass(frozen=True)
class ImpactFamily:
    """The impact ratios of one categorisation (one field, or an intersection of fields)."""

    by: tuple[str, ...]
    rows: list[ImpactRow]
    reference: str | None
    min_n: int
    bound: float
    note: str
    exclude_below_share: float = 0.0
    """Groups with a smaller share of the stimuli are excluded from the ratios (0: none)."""

    @property
    def key(self) -> str:
        return "+".join(self.by)

    def judged(self) -> list[ImpactRow]:
        """The groups the lowest ratio is taken over (at least `min_n` stimuli, not
        excluded, a defined ratio, not the reference)."""
        return [r for r in self.rows if not r.small and not r.reference and not r.excluded and r.ratio.has_data]

    def groups_compared(self) -> int:
        """G: the groups the lowest ratio is the worst pair of (the judged groups and the
        reference); 0 when nothing is judged."""
        n = len(self.judged())
        return n + 1 if n else 0

    def lowest(self, split: int = 1) -> Estimate:
        """The smallest ratio among the groups judged on their own (not small, not excluded,
        defined, not the reference), with the simultaneous interval over the family's G
        groups (`lowest_critical`; alpha divided by `split` when the lowest is also picked
        among `split` categorisations; see the module text); undefined with the reason when
        no group is judged."""
        from scipy.stats import norm
        judged = self.judged()
        if not judged:
            kept = [r for r in self.rows if not r.excluded]
            if self.rows and not kept:
                why = (f"every group has less than {self.exclude_below_share:g} of the data and is excluded "
                       "(exclude_below_share)")
            elif self.reference is None and kept:
                why = "no group has a selection rate above 0"
            else:
                why = (f"no group other than the reference has at least {self.min_n} stimuli (min_n)"
                       + (f" and a share of at least {self.exclude_below_share:g} of the data"
                          if self.exclude_below_share else ""))
            return Estimate.no_data(KATZ, f"undefined: {why}")
        low = min(judged, key=lambda r: (float(r.ratio.value or 0.0), r.group))
        [ref] = [r for r in self.rows if r.reference]
        g = len(judged) + 1
        e = low.ratio
        alpha = (1.0 - e.level) / split
        c, ct = lowest_critical(g, alpha / 2), lowest_critical(g, alpha)
        a, r0 = low.rate, ref.rate
        lo, hi = _katz_at(a, r0, c)
        tlo, thi = _katz_at(a, r0, ct)
        if g > 2 or split > 1:
            how = (f"simultaneous over the {g} groups (the reference and the lowest both picked from the data"
                   + (f"; alpha split over {split} categorisations" if split > 1 else "")
                   + f"): Katz interval with critical value {c:.4g} (least favourable configuration), not "
                     f"{float(norm.isf((1 - e.level) / 2)):.4g}")
        else:
            how = ""
        note = "; ".join(x for x in (f"group {low.group} (lowest of {len(judged)} judged groups, picked after "
                                     "looking)", how, e.note) if x)
        return e.model_copy(update={"ci_low": lo, "ci_high": hi, "note": note,
                                    "method": e.method + (SIMULTANEOUS if how else ""), "tost_interval": (tlo, thi)})


def _katz_at(a: GroupRate, ref: GroupRate, crit: float) -> tuple[float, float]:
    """Katz's interval of a / ref (effective counts) with critical value `crit`."""
    from scipy.stats import norm
    level = 1.0 - 2.0 * float(norm.sf(crit))
    _, lo, hi = katz_interval(a.value * a.n_eff, a.n_eff, ref.value * ref.n_eff, ref.n_eff, level)
    return float(lo), float(hi)


def impact_ratios(values: Mapping[str, Sequence[float]], clusters: Mapping[str, Sequence[object]] | None = None, *,
                  by: Sequence[str] = ("group",), min_n: int = MIN_N, bound: float = FOUR_FIFTHS,
                  level: float = 0.95, exclude_below_share: float = 0.0) -> ImpactFamily:
    """Impact ratios of the groups of 0/1 `values` (group -> rows; `clusters`: the
    stimulus of each row). See the module text for the interval, zeros, the reference and
    `exclude_below_share`."""
    names = [g for g in values if len(values[g])]
    rates = {g: group_rate(values[g], clusters[g] if clusters is not None else None) for g in names}
    total = sum(rates[g].clusters for g in names)
    share = {g: rates[g].clusters / total for g in names} if total else {}
    excluded = {g: bool(exclude_below_share) and share[g] < exclude_below_share for g in names}
    small = {g: rates[g].clusters < min_n for g in names}
    pool = [g for g in names if not small[g] and not excluded[g]] or [g for g in names if not excluded[g]]
    ref = max(pool, key=lambda g: rates[g].value) if pool else None  # ties: the first in the mapping's order
    notes = []
    if ref is not None and sum(rates[g].value == rates[ref].value for g in pool) > 1:
        notes.append(f"{sum(rates[g].value == rates[ref].value for g in pool)} groups share the highest rate; "
                     f"the first, {ref}, is the reference (the ratios are the same whichever is)")
    if pool and all(small[g] for g in pool) and any(small.values()):
        notes.append(f"no group has {min_n} stimuli: the reference is the highest rate of all (small) groups")
    if ref is not None and rates[ref].value <= 0:
        ref = None
    rows = []
    for g in names:
        r = rates[g]
        sel = int(round(float(np.sum(values[g]))))
        sh = share[g] if exclude_below_share else None
        if excluded[g]:
            est = Estimate.no_data(KATZ, f"excluded: {r.clusters} stimuli, {share[g]:.2%} of the data < "
                                         f"{exclude_below_share:g} (exclude_below_share, 6 RCNY 5-301(d)); its rate "
                                         "is reported, its ratio not calculated")
            rows.append(ImpactRow(g, r, sel, est.model_copy(update={"n": r.clusters}), small[g], False, "excluded",
                                  excluded=True, share=sh))
            continue
        if ref is None:
            est = Estimate.no_data(KATZ, "undefined: no group was selected (the most favoured rate is 0, ratio 0/0)")
            rows.append(ImpactRow(g, r, sel, est.model_copy(update={"n": r.clusters}), small[g], False, "undefined",
                                  share=sh))
            continue
        rr = rates[ref]
        clustered = r.n_eff < r.n or rr.n_eff < rr.n or r.clusters < r.n or rr.clusters < rr.n
        method = KATZ_CLUSTERED if clustered else KATZ
        if g == ref:
            est = Estimate(value=1.0, ci_low=None, ci_high=None, n=r.clusters, method="reference",
                           note="most favoured group (highest rate): the reference of every ratio")
            rows.append(ImpactRow(g, r, sel, est, small[g], True, "reference", share=sh))
            continue
        ratio, lo, hi = katz_interval(r.value * r.n_eff, r.n_eff, rr.value * rr.n_eff, rr.n_eff, level)
        # the same interval at 1 - 2 alpha (90% beside 95%), for equivalence thresholds (TOST)
        _, tlo, thi = katz_interval(r.value * r.n_eff, r.n_eff, rr.value * rr.n_eff, rr.n_eff, 2 * level - 1)
        parts = []
        if clustered:
            parts.append(f"effective n {r.n_eff:.1f} vs {rr.n_eff:.1f} (clustered by stimulus)")
        if r.value <= 0 or r.value >= 1 or rr.value >= 1:
            parts.append("0.5 added to each count of the 2x2 table for the interval (a zero count)")
        if small[g]:
            parts.append(f"small cell: {r.clusters} stimuli < {min_n}; reported, not judged")
        est = Estimate(value=float(ratio), ci_low=float(lo), ci_high=float(hi), n=r.clusters + rr.clusters,
                       rows=(r.n + rr.n) if clustered else None, method=method, level=level,
                       note="; ".join(parts), tost_interval=(float(tlo), float(thi)))
        flag = "small cell" if small[g] else ("below " + f"{bound:g}") if float(ratio) < bound else ""
        rows.append(ImpactRow(g, r, sel, est, small[g], False, flag, share=sh))
    n_small = sum(small[g] and not excluded[g] for g in names)
    eff = " on effective counts (clustered by stimulus)" if any(r.ratio.method == KATZ_CLUSTERED for r in rows) else ""
    note = (f"impact ratio: a group's rate over the rate of the most favoured group ({ref or 'none'}); "
            f"{level:.0%} Katz log interval{eff}; flagged below {bound:g} (four-fifths rule). "
            f"Groups with fewer than {min_n} stimuli: {n_small}, reported and not flagged.")
    if exclude_below_share:
        out = [f"{g} ({rates[g].clusters} stimuli, {share[g]:.2%}, rate {rates[g].value:.4g})"
               for g in names if excluded[g]]
        notes.append(f"Excluded from the ratios as under {exclude_below_share:g} of the data (6 RCNY 5-301(d)): "
                     + (", ".join(out) if out else "none"))
    return ImpactFamily(by=tuple(by), rows=rows, reference=ref, min_n=min_n, bound=bound,
                        note=" ".join([note, *notes]), exclude_below_share=exclude_below_share)


__all__ = ["FOUR_FIFTHS", "KATZ", "KATZ_CLUSTERED", "MIN_N", "SIMULTANEOUS", "ImpactFamily", "ImpactRow",
           "impact_ratios", "lowest_critical",
           "katz_interval"]
