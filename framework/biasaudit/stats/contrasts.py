"""Pairwise contrasts between groups of 0/1 outcomes: every pair's difference with a 95%
interval and a test, Holm-adjusted across the pairs, and a paired (within-unit) contrast
where the design matches units across groups.

Independent groups (a stimulus belongs to one group): the difference p_a - p_b with
Newcombe's hybrid score interval (Newcombe 1998, method 10: the two Wilson intervals
combined by the square-and-add rule; statsmodels `confint_proportions_2indep`,
method="newcomb"). When a group's rows come in clusters (a stimulus asked under several
prompt conditions), each Wilson interval is the design-effect one (`wilson_clustered`):
the same square-and-add rule on the effective sample sizes (Zou and Donner's MOVER). The
test is the pooled two-proportion z test on the same (effective) sample sizes
(statsmodels `proportions_ztest` when rows are independent).

Continuous values (a mean score per group, e.g. TFDP's parity scores): the difference of
means with Welch's interval and test (scipy `ttest_ind(equal_var=False)`), one value per
independent unit (`pairwise_mean_contrasts`).

Matched units (the same item under each group: a template filled with each group, a
stimulus under each level of a prompt factor): per unit, the mean of its rows in group a
minus that in group b; the mean difference with a t interval and the paired t test
(scipy `ttest_rel`) over the units present in both groups.

Each difference also carries its interval at 1 - 2 alpha (90%) by the same method on the
same data (`Estimate.tost_interval`), so an equivalence threshold (TOST) can show parity
between two groups.

The per-pair intervals are each at 95% (not simultaneous); the p-values are Holm-adjusted
across the pairs of one family (statsmodels `multipletests(method="holm")`), so "some pair
differs" is controlled at 5% family-wise. With more than `MAX_GROUPS` groups only the
largest minus the smallest group is reported (a pair chosen after looking: its interval
is not corrected for that choice).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from biasaudit.records.estimate import Estimate
from biasaudit.stats.means import mean_t
from biasaudit.stats.proportions import _wilson_bounds, effective_n
from biasaudit.stats.significance import holm, paired_t

MAX_GROUPS = 10
"""At most this many groups get every pairwise contrast (45 pairs); beyond, only max - min."""


@dataclass(frozen=True)
class GroupRate:
    """One group's share of 1s: `n` rows, `clusters` stimuli, `n_eff` effective units."""

    value: float
    n: int
    clusters: int
    n_eff: float


@dataclass(frozen=True)
class Contrast:
    """Group `a` minus group `b`."""

    a: str
    b: str
    difference: Estimate
    """Independent-groups difference (Newcombe hybrid score interval)."""
    p_value: float | None
    p_holm: float | None = None
    paired: Estimate | None = None
    """Within-unit difference over the units in both groups (t interval); None when no unit is matched."""
    paired_p: float | None = None
    paired_p_holm: float | None = None


@dataclass(frozen=True)
class ContrastFamily:
    groups: dict[str, GroupRate]
    contrasts: list[Contrast]
    note: str
    all_pairs: bool = True
    """False when the groups exceeded `MAX_GROUPS` and only max - min is reported."""
    paired_units: str = ""
    """What a paired contrast matches on (empty: no paired contrast)."""


def group_rate(values: Sequence[float], clusters: Sequence[object] | None = None) -> GroupRate:
    x = np.asarray(values, dtype=np.float64)
    p = float(x.mean()) if x.size else float("nan")
    if clusters is None or len(set(map(str, clusters))) == x.size:
        return GroupRate(value=p, n=int(x.size), clusters=int(x.size), n_eff=float(x.size))
    n_eff, k = effective_n(x, clusters)
    return GroupRate(value=p, n=int(x.size), clusters=k, n_eff=n_eff)


def newcombe(ra: GroupRate, rb: GroupRate, level: float = 0.95) -> Estimate:
    """p_a - p_b with Newcombe's hybrid score interval on the (effective) sample sizes."""
    if ra.n == 0 or rb.n == 0:
        return Estimate.no_data("newcombe-hybrid-score", "a group has no data")
    la, ua = _wilson_bounds(ra.value, ra.n_eff, level)
    lb, ub = _wilson_bounds(rb.value, rb.n_eff, level)
    d = ra.value - rb.value
    lo = d - math.sqrt((ra.value - la) ** 2 + (ub - rb.value) ** 2)
    hi = d + math.sqrt((ua - ra.value) ** 2 + (rb.value - lb) ** 2)
    # the same square-and-add at 1 - 2 alpha (90% beside 95%), for equivalence thresholds:
    # the TOST of Newcombe's interval (statsmodels' tost_proportions_2indep has no Newcombe test)
    tl = 2 * level - 1
    la2, ua2 = _wilson_bounds(ra.value, ra.n_eff, tl)
    lb2, ub2 = _wilson_bounds(rb.value, rb.n_eff, tl)
    tost = (max(-1.0, d - math.sqrt((ra.value - la2) ** 2 + (ub2 - rb.value) ** 2)),
            min(1.0, d + math.sqrt((ua2 - ra.value) ** 2 + (rb.value - lb2) ** 2)))
    clustered = ra.n_eff < ra.n or rb.n_eff < rb.n or ra.clusters < ra.n or rb.clusters < rb.n
    note = (f"effective n {ra.n_eff:.1f} vs {rb.n_eff:.1f} (clustered by stimulus)" if clustered else "")
    return Estimate(value=d, ci_low=max(-1.0, lo), ci_high=min(1.0, hi), n=ra.clusters + rb.clusters,
                    rows=ra.n + rb.n if clustered else None, method="newcombe-hybrid-score", level=level, note=note,
                    tost_interval=tost)


def two_proportion_z(ra: GroupRate, rb: GroupRate) -> float | None:
    """Two-sided p of the pooled two-proportion z test on the (effective) sample sizes."""
    from scipy.stats import norm
    if ra.n == 0 or rb.n == 0:
        return None
    pool = (ra.value * ra.n_eff + rb.value * rb.n_eff) / (ra.n_eff + rb.n_eff)
    var = pool * (1 - pool) * (1 / ra.n_eff + 1 / rb.n_eff)
    if var <= 0:
        return 1.0  # both groups all 0 or all 1: no difference
    z = (ra.value - rb.value) / math.sqrt(var)
    return float(2 * norm.sf(abs(z)))


def paired_difference_t(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> tuple[Estimate, float | None]:
    """Mean of a - b over matched units with a t interval, and the paired t test's p
    (scipy `ttest_rel`)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.size == 0:
        return Estimate.no_data("paired-t", "no unit in both groups"), None
    if d.size < 2 or float(d.std(ddof=1)) == 0.0:
        # one unit, or every unit differing by the same amount: a zero-width t interval is
        # no measurement of uncertainty, and a threshold must not PASS or FAIL on it
        why = "one matched unit" if d.size < 2 else f"all {d.size} matched units differ by the same amount"
        return Estimate(value=None, ci_low=None, ci_high=None, n=int(d.size), method="paired-t", level=level,
                        note=f"undefined: {why}, so the t interval has no width"), None
    e = mean_t(d, level).model_copy(update={"method": "paired-t"})
    t = paired_t(list(a), list(b))
    return e, (t.p_value if d.size >= 2 else None)


def _pairs(names: list[str], rates: Mapping[str, GroupRate], all_pairs: bool) -> list[tuple[str, str]]:
    """Every pair (a before b in `names`' order), or only the largest minus the smallest
    group (none when they are one group)."""
    if all_pairs:
        return list(itertools.combinations(names, 2))
    hi = max(names, key=lambda g: rates[g].value)
    lo = min(names, key=lambda g: rates[g].value)
    return [(hi, lo)] if hi != lo else []


def _unit_means(values: Sequence[float], units: Sequence[str | None]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for v, u in zip(values, units, strict=True):
        if u is not None:
            sums.setdefault(u, []).append(float(v))
    return {u: sum(vs) / len(vs) for u, vs in sums.items()}


def _adjust(ps: list[float | None]) -> list[float | None]:
    idx = [i for i, p in enumerate(ps) if p is not None]
    out: list[float | None] = [None] * len(ps)
    if idx:
        _, adj = holm([ps[i] for i in idx])  # type: ignore[misc]
        for i, q in zip(idx, adj, strict=True):
            out[i] = float(q)
    return out


def pairwise_contrasts(values: Mapping[str, Sequence[float]], clusters: Mapping[str, Sequence[object]] | None = None,
                       units: Mapping[str, Sequence[str | None]] | None = None, *, level: float = 0.95,
                       max_groups: int = MAX_GROUPS, paired_units: str = "") -> ContrastFamily:
    """Every pair (a, b) of groups (a before b in the mapping's order) of 0/1 `values`:
    a - b with Newcombe's interval and a z test; `clusters` (per group, per row) make the
    intervals and tests use each group's effective sample size; `units` (per group, per
    row: the matched unit, None for none) add a paired contrast. Holm across the pairs."""
    names = [g for g in values if len(values[g])]
    rates = {g: group_rate(values[g], clusters[g] if clusters is not None else None) for g in names}
    all_pairs = len(names) <= max_groups
    pairs = _pairs(names, rates, all_pairs)
    diffs = [newcombe(rates[a], rates[b], level) for a, b in pairs]
    ps = [two_proportion_z(rates[a], rates[b]) for a, b in pairs]
    paired: list[Estimate | None] = []
    pps: list[float | None] = []
    for a, b in pairs:
        if units is None:
            paired.append(None)
            pps.append(None)
            continue
        ma, mb = _unit_means(values[a], units[a]), _unit_means(values[b], units[b])
        common = sorted(set(ma) & set(mb))
        if not common:
            paired.append(None)
            pps.append(None)
            continue
        e, p = paired_difference_t([ma[u] for u in common], [mb[u] for u in common], level)
        paired.append(e)
        pps.append(p)
    q, pq = (_adjust(ps), _adjust(pps)) if all_pairs else (ps, pps)
    k = len(pairs)
    out = []
    for i, (a, b) in enumerate(pairs):
        diff = diffs[i].model_copy(update={"note": _join(diffs[i].note, _p_note(ps[i], q[i], k, all_pairs))})
        pe = paired[i]
        if pe is not None:
            pe = pe.model_copy(update={"note": _join(f"{pe.n} {paired_units or 'units'} in both groups",
                                                     _p_note(pps[i], pq[i], k, all_pairs, test="paired t"))})
        out.append(Contrast(a=a, b=b, difference=diff, p_value=ps[i], p_holm=q[i] if all_pairs else None,
                            paired=pe, paired_p=pps[i], paired_p_holm=pq[i] if all_pairs else None))
    if all_pairs:
        note = (f"{k} pair{'s' if k != 1 else ''} of {len(names)} groups: each difference with its own "
                f"{level:.0%} interval (Newcombe hybrid score); p-values Holm-adjusted across the {k} pairs "
                "(family-wise error 5%).")
    else:
        note = (f"{len(names)} groups: {len(names) * (len(names) - 1) // 2} pairs exceed the bound of "
                f"{max_groups * (max_groups - 1) // 2} ({max_groups} groups); only the largest minus the smallest "
                "group (max - min) is reported, its interval not corrected for picking that pair.")
    if units is not None and paired_units:
        note += (f" Paired: the mean within-{paired_units} difference over the {paired_units}s present in both "
                 "groups, t interval and paired t test (Holm across the pairs).")
    return ContrastFamily(groups=rates, contrasts=out, note=note, all_pairs=all_pairs, paired_units=paired_units)


def welch_difference(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> tuple[Estimate, float | None]:
    """mean(a) - mean(b) of two independent groups of continuous values, with Welch's
    interval and test (scipy `ttest_ind(equal_var=False)`); undefined with the reason when
    a group has fewer than two values or neither group varies."""
    from scipy.stats import ttest_ind

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size < 2 or y.size < 2:
        return Estimate(value=None, ci_low=None, ci_high=None, n=int(x.size + y.size), method="welch-t", level=level,
                        note="undefined: a group has fewer than two values, so its variance is unknown"), None
    if float(x.var(ddof=1)) == 0.0 and float(y.var(ddof=1)) == 0.0:
        return Estimate(value=None, ci_low=None, ci_high=None, n=int(x.size + y.size), method="welch-t", level=level,
                        note="undefined: neither group varies, so Welch's interval has no width"), None
    t = ttest_ind(x, y, equal_var=False)
    lo, hi = t.confidence_interval(level)
    # Welch's interval at 1 - 2 alpha (same df): inside an equivalence band exactly when both
    # one-sided Welch tests reject at alpha (statsmodels `ttost_ind(usevar="unequal")`)
    tlo, thi = t.confidence_interval(2 * level - 1)
    return Estimate(value=float(x.mean() - y.mean()), ci_low=float(lo), ci_high=float(hi), n=int(x.size + y.size),
                    method="welch-t", level=level, tost_interval=(float(tlo), float(thi))), float(t.pvalue)


def pairwise_mean_contrasts(values: Mapping[str, Sequence[float]], *, level: float = 0.95,
                            max_groups: int = MAX_GROUPS) -> ContrastFamily:
    """Every pair (a, b) of groups of continuous `values` (one independent value per unit):
    mean(a) - mean(b) with Welch's interval and test, Holm-adjusted across the pairs. With
    more than `max_groups` groups, only the largest minus the smallest mean."""
    names = [g for g in values if len(values[g])]
    rates = {g: GroupRate(value=float(np.mean(values[g])), n=len(values[g]), clusters=len(values[g]),
                          n_eff=float(len(values[g]))) for g in names}
    all_pairs = len(names) <= max_groups
    pairs = _pairs(names, rates, all_pairs)
    got = [welch_difference(values[a], values[b], level) for a, b in pairs]
    ps = [p for _, p in got]
    q = _adjust(ps) if all_pairs else ps
    k = len(pairs)
    out = [Contrast(a=a, b=b, difference=e.model_copy(update={"note": _join(e.note, _p_note(ps[i], q[i], k, all_pairs,
                                                                                          test="Welch t"))}),
                    p_value=ps[i], p_holm=q[i] if all_pairs else None) for i, ((a, b), (e, _)) in enumerate(
                        zip(pairs, got, strict=True))]
    if all_pairs:
        note = (f"{k} pair{'s' if k != 1 else ''} of {len(names)} groups: each difference of means with its own "
                f"{level:.0%} Welch interval; p-values Holm-adjusted across the {k} pairs (family-wise error 5%).")
    else:
        note = (f"{len(names)} groups: only the largest minus the smallest mean is reported (more than "
                f"{max_groups} groups), its interval not corrected for picking that pair.")
    return ContrastFamily(groups=rates, contrasts=out, note=note, all_pairs=all_pairs)


def cannot_decide(fam: ContrastFamily, c: Contrast) -> str | None:
    """Why contrast `c` cannot inform whatever the model answered, or None when it can.

    The rule looks only at the groups' sizes, never at the values observed, so leaving a
    contrast out cannot pick the results a reader sees. A contrast cannot inform when
    neither of its parts could show a difference:
    - the independent-groups difference of 0/1 outcomes (Newcombe): even the most extreme
      outcome possible at the two groups' (effective) sizes, one group all 1s and the
      other all 0s, gives a 95% interval that contains 0 (two groups of 1 stimulus each:
      1 of 1 against 0 of 1 gives [-0.122, 1]; from 2 stimuli in each group the extreme
      outcome excludes 0; only 1 vs 1 and 1 vs 2 stimuli fail it, checked against
      statsmodels `confint_proportions_2indep(method="newcomb")`). An interval that cannot
      exclude 0 cannot show a difference, and at these sizes equal outcomes give an
      interval at least 0.65 wide on a side (+/-0.79 at 1 vs 1), too wide to show parity
      within any usable margin;
    - a difference that is undefined (a group of fewer than two values for Welch's
      interval; a group whose own estimate is undefined);
    - the paired part, when there is one, is undefined or absent."""
    d = c.difference
    paired_ok = c.paired is not None and c.paired.has_data
    if paired_ok:
        return None
    if not d.has_data:
        return (d.note or "undefined").split(";")[0]
    if d.method == "newcombe-hybrid-score":
        ra, rb = fam.groups[c.a], fam.groups[c.b]
        hi = newcombe(GroupRate(1.0, ra.n, ra.clusters, ra.n_eff), GroupRate(0.0, rb.n, rb.clusters, rb.n_eff))
        lo = newcombe(GroupRate(0.0, ra.n, ra.clusters, ra.n_eff), GroupRate(1.0, rb.n, rb.clusters, rb.n_eff))
        if (hi.ci_low is not None and hi.ci_low <= 0.0) and (lo.ci_high is not None and lo.ci_high >= 0.0):
            return (f"{ra.clusters} vs {rb.clusters} stimuli: even all 1s against all 0s would give a 95% interval "
                    "containing 0")
    return None


def _p_note(p: float | None, q: float | None, k: int, all_pairs: bool, test: str = "z") -> str:
    if p is None:
        return ""
    if not all_pairs:
        return f"{test} p = {p:.4g} (max - min pair, picked after looking)"
    return f"{test} p = {p:.4g}, Holm p = {q:.4g} over {k} pairs" if q is not None else f"{test} p = {p:.4g}"


def _join(a: str, b: str) -> str:
    return "; ".join(x for x in (a, b) if x)


__all__ = ["MAX_GROUPS", "Contrast", "ContrastFamily", "GroupRate", "cannot_decide", "group_rate", "newcombe", "paired_difference_t",
           "pairwise_contrasts", "pairwise_mean_contrasts", "two_proportion_z", "welch_difference"]
