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
chosen after looking at the rates and each interval is conditional on it (it treats the
reference rate as estimated, not as the maximum of several). Small cells (fewer than
`min_n` stimuli) are reported with a note, never dropped, and never given the four-fifths
flag on their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

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


def katz_interval(x1: np.ndarray | float, n1: np.ndarray | float, x0: np.ndarray | float, n0: np.ndarray | float,
                  level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ratio, low, high) of (x1/n1) / (x0/n0) by Katz's log method, element-wise.

    Counts may be effective (non-integer). Where any of x1, n1 - x1, x0, n0 - x0 is 0,
    0.5 is added to all four for the interval (the ratio stays the unshifted one); where
    x1 is 0 the low end is 0. Where x0 is 0 everything is NaN (0 / 0 or x / 0)."""
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
    """`below 0.8`, `` (at or above), `small cell`, `undefined`, or `reference`."""


@dataclass(frozen=True)
class ImpactFamily:
    """The impact ratios of one categorisation (one field, or an intersection of fields)."""

    by: tuple[str, ...]
    rows: list[ImpactRow]
    reference: str | None
    min_n: int
    bound: float
    note: str

    @property
    def key(self) -> str:
        return "+".join(self.by)

    def lowest(self) -> Estimate:
        """The smallest ratio among the groups judged on their own (not small, defined,
        not the reference), as that group's estimate; undefined with the reason otherwise."""
        judged = [r for r in self.rows if not r.small and not r.reference and r.ratio.has_data]
        if not judged:
            why = ("no group has a selection rate above 0" if self.reference is None and self.rows
                   else "no group other than the reference has at least "
                        f"{self.min_n} stimuli (min_n)")
            return Estimate.no_data(KATZ, f"undefined: {why}")
        low = min(judged, key=lambda r: (float(r.ratio.value or 0.0), r.group))
        return low.ratio.model_copy(update={"note": f"group {low.group} (lowest of {len(judged)} judged groups, "
                                                    f"picked after looking); {low.ratio.note}".rstrip("; ")})


def impact_ratios(values: Mapping[str, Sequence[float]], clusters: Mapping[str, Sequence[object]] | None = None, *,
                  by: Sequence[str] = ("group",), min_n: int = MIN_N, bound: float = FOUR_FIFTHS,
                  level: float = 0.95) -> ImpactFamily:
    """Impact ratios of the groups of 0/1 `values` (group -> rows; `clusters`: the
    stimulus of each row). See the module text for the interval, zeros and the reference."""
    names = [g for g in values if len(values[g])]
    rates = {g: group_rate(values[g], clusters[g] if clusters is not None else None) for g in names}
    small = {g: rates[g].clusters < min_n for g in names}
    pool = [g for g in names if not small[g]] or names
    ref = max(pool, key=lambda g: rates[g].value) if pool else None  # ties: the first in the mapping's order
    notes = []
    if ref is not None and sum(rates[g].value == rates[ref].value for g in pool) > 1:
        notes.append(f"{sum(rates[g].value == rates[ref].value for g in pool)} groups share the highest rate; "
                     f"the first, {ref}, is the reference (the ratios are the same whichever is)")
    if pool is names and any(small.values()):
        notes.append(f"no group has {min_n} stimuli: the reference is the highest rate of all (small) groups")
    if ref is not None and rates[ref].value <= 0:
        ref = None
    rows = []
    for g in names:
        r = rates[g]
        sel = int(round(float(np.sum(values[g]))))
        if ref is None:
            est = Estimate.no_data(KATZ, "undefined: no group was selected (the most favoured rate is 0, ratio 0/0)")
            rows.append(ImpactRow(g, r, sel, est.model_copy(update={"n": r.clusters}), small[g], False, "undefined"))
            continue
        rr = rates[ref]
        clustered = r.n_eff < r.n or rr.n_eff < rr.n or r.clusters < r.n or rr.clusters < rr.n
        method = KATZ_CLUSTERED if clustered else KATZ
        if g == ref:
            est = Estimate(value=1.0, ci_low=None, ci_high=None, n=r.clusters, method="reference",
                           note="most favoured group (highest rate): the reference of every ratio")
            rows.append(ImpactRow(g, r, sel, est, small[g], True, "reference"))
            continue
        ratio, lo, hi = katz_interval(r.value * r.n_eff, r.n_eff, rr.value * rr.n_eff, rr.n_eff, level)
        parts = []
        if clustered:
            parts.append(f"effective n {r.n_eff:.1f} vs {rr.n_eff:.1f} (clustered by stimulus)")
        if r.value <= 0 or r.value >= 1 or rr.value >= 1:
            parts.append("0.5 added to each count of the 2x2 table for the interval (a zero count)")
        if small[g]:
            parts.append(f"small cell: {r.clusters} stimuli < {min_n}; reported, not judged")
        est = Estimate(value=float(ratio), ci_low=float(lo), ci_high=float(hi), n=r.clusters + rr.clusters,
                       rows=(r.n + rr.n) if clustered else None, method=method, level=level,
                       note="; ".join(parts))
        flag = "small cell" if small[g] else ("below " + f"{bound:g}") if float(ratio) < bound else ""
        rows.append(ImpactRow(g, r, sel, est, small[g], False, flag))
    n_small = sum(small.values())
    eff = " on effective counts (clustered by stimulus)" if any(r.ratio.method == KATZ_CLUSTERED for r in rows) else ""
    note = (f"impact ratio: a group's rate over the rate of the most favoured group ({ref or 'none'}); "
            f"{level:.0%} Katz log interval{eff}; flagged below {bound:g} (four-fifths rule). "
            f"Groups with fewer than {min_n} stimuli: {n_small}, reported and not flagged.")
    return ImpactFamily(by=tuple(by), rows=rows, reference=ref, min_n=min_n, bound=bound,
                        note=" ".join([note, *notes]))


__all__ = ["FOUR_FIFTHS", "KATZ", "KATZ_CLUSTERED", "MIN_N", "ImpactFamily", "ImpactRow", "impact_ratios",
           "katz_interval"]
