"""One way to break an estimate down: per group, per cell, and pooled.

Metrics turn their units into `Obs` rows (cell, stimulus, value, stimulus fields) and
ask for the breakdown they report, instead of each writing its own `by` loop.

Pooling over rows that are not independent. A stimulus asked under several prompt
conditions (cells), paraphrases or samples gives several rows that share the stimulus,
and the pooled interval must account for it. For a proportion: the Wilson interval on
the design's effective sample size (`wilson-design-effect`: the cluster-robust variance
of the pooled proportion against the binomial one; see `stats.wilson_clustered`), which
stays inside [0, 1] and never collapses to zero width at 0 or 1. For any other mean: the
cluster-robust t interval over stimuli (`cluster-t`, `stats.mean_t_clustered`: t on
G - 1 degrees of freedom, G stimuli; with the same rows per stimulus, the t interval on
the stimulus means), at any number of stimuli from 2. It replaced a percentile cluster
bootstrap whose 95% interval covered 82.6% at 5 stimuli, 90.0% at 10, 92.8% at 20 and
93.8% at 40 (issue 38), with no number of stimuli a practical audit reaches where it is
nominal; the t interval covers 95% from 5 stimuli on and is the test `plan --power`
plans these means with, so the plan and the verdict agree. A clustered pooled
estimate reports `n` = the stimuli (the independent units), `rows` the rows and `cells`
the prompt conditions. With one row per stimulus the rows are
independent and the pooled estimate is the estimator's own (Wilson for proportions, t for
means). A per-cell estimate keeps the estimator's own interval.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from biasaudit.records.estimate import Estimate, GroupRef, Subset
from biasaudit.stats import mean_t, wilson, wilson_clustered
from biasaudit.stats.codes import Codes
from biasaudit.stats.contrasts import MAX_GROUPS, ContrastFamily, cannot_decide, pairwise_contrasts
from biasaudit.stats.means import CLUSTER_T, mean_t_clustered

if TYPE_CHECKING:
    from biasaudit.records.metric_result import Table


_NO_FIELDS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Obs:
    """One row: the value of a unit, where it sits, and its stimulus's fields. Slotted, and
    a row without fields shares one empty mapping: metrics build one per unit (issue 42)."""

    cell: str
    cluster: str
    """The stimulus (rows of one stimulus are resampled together)."""
    value: float
    fields: Mapping[str, Any] = field(default_factory=lambda: _NO_FIELDS)


Estimator = Callable[[Sequence[Obs]], Estimate]


def proportion(rows: Sequence[Obs]) -> Estimate:
    """Wilson interval of the share of rows with value 1 (values are 0 or 1)."""
    return wilson(int(round(sum(r.value for r in rows))), len(rows))


def mean(rows: Sequence[Obs]) -> Estimate:
    """t interval of the mean value."""
    return mean_t([r.value for r in rows])


def clustered(rows: Sequence[Obs]) -> bool:
    """True when some stimulus gives more than one row."""
    return any(n > 1 for n in Counter(r.cluster for r in rows).values())


def pooled(rows: Sequence[Obs], estimator: Estimator = proportion, *, scale: float = 1.0, seed: int = 0,
           n_resamples: int = 10_000) -> Estimate:
    """The estimate over all rows (see the module text for when it is clustered);
    `estimator` must estimate the mean of the values. `seed` and `n_resamples` are kept
    for callers that passed them to the cluster bootstrap this used to be; the
    cluster-robust t interval draws nothing."""
    n_cells = len({r.cell for r in rows})
    if not rows or not clustered(rows):
        e = estimator(rows)
    elif estimator is proportion:
        e = wilson_clustered([r.value for r in rows], [r.cluster for r in rows])
    elif len({r.cluster for r in rows}) == 1:
        # one stimulus under several conditions: nothing tells how another stimulus would differ
        m = sum(r.value for r in rows) / len(rows)
        e = Estimate(value=m, ci_low=None, ci_high=None, n=len(rows), method=CLUSTER_T,
                     note="one stimulus: no interval across stimuli")
    else:
        e = mean_t_clustered([r.value for r in rows], [r.cluster for r in rows])
    n_clusters = len({r.cluster for r in rows})
    e = e.model_copy(update={"clusters": n_clusters if rows else None, "cells": n_cells if rows else None})
    if rows and n_clusters < len(rows):
        e = e.model_copy(update={"n": n_clusters, "rows": len(rows)})
    return e.scaled(scale) if scale != 1.0 else e


def pooled_columns(values: Sequence[float] | np.ndarray, clusters: Sequence[str] | Codes, cells: Sequence[str] | Codes,
                   estimator: Estimator = proportion) -> Estimate:
    """`pooled(rows, estimator)` of the rows given as columns (row i: `cells[i]`,
    `clusters[i]`, `values[i]`, no stimulus fields): the same estimate, bit for bit,
    without building an `Obs` per row and counting the clusters once (a metric pooling
    several rates over the same million rows). Rows are built only for an unclustered
    estimator call, which reads them. `Codes` for the clusters and cells (and an array of
    values) keep a million rows at a few bytes each (stats/codes.py)."""
    if len(values) == 0:
        return pooled([], estimator)
    if isinstance(clusters, Codes):
        sizes = np.bincount(clusters.codes)
        n_clusters = int(np.count_nonzero(sizes))
        repeated = bool((sizes > 1).any())
    else:
        per_cluster = Counter(clusters)
        n_clusters = len(per_cluster)
        repeated = any(n > 1 for n in per_cluster.values())
    n_cells = int(np.unique(cells.codes).size) if isinstance(cells, Codes) else len(set(cells))
    if not repeated:
        cell_of = cells.labels() if isinstance(cells, Codes) else cells
        cluster_of = clusters.labels() if isinstance(clusters, Codes) else clusters
        e = estimator([Obs(cell=c, cluster=k, value=float(v))
                       for c, k, v in zip(cell_of, cluster_of, values, strict=True)])
    elif estimator is proportion:
        e = wilson_clustered(values, clusters)
    elif n_clusters == 1:
        m = float(sum(values)) / len(values)
        e = Estimate(value=m, ci_low=None, ci_high=None, n=len(values), method=CLUSTER_T,
                     note="one stimulus: no interval across stimuli")
    else:
        e = mean_t_clustered(np.asarray(values, dtype=np.float64),
                             clusters if isinstance(clusters, Codes) else list(clusters))
    e = e.model_copy(update={"clusters": n_clusters, "cells": n_cells})
    if n_clusters < len(values):
        e = e.model_copy(update={"n": n_clusters, "rows": len(values)})
    return e


def split(rows: Sequence[Obs], key: Callable[[Obs], str]) -> dict[str, list[Obs]]:
    """Rows by `key`, in sorted key order."""
    out: dict[str, list[Obs]] = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return {k: out[k] for k in sorted(out)}


def by_cell(rows: Sequence[Obs], estimator: Estimator = proportion, *, cells: Sequence[str] | None = None,
            scale: float = 1.0) -> dict[str, Estimate]:
    """The estimator's own estimate in each cell (in `cells` order when given; cells
    without rows are left out)."""
    groups = split(rows, lambda r: r.cell)
    order = [c for c in cells if c in groups] if cells is not None else list(groups)
    out = {}
    for c in order:
        e = estimator(groups[c])
        out[c] = e.scaled(scale) if scale != 1.0 else e
    return out


MISSING_GROUP = "(skipped: not in the data)"
"""The one group of a breakdown by a field no row has (see `by_group`)."""


def by_group(rows: Sequence[Obs], field_name: str, estimator: Estimator = proportion, *, scale: float = 1.0,
             seed: int = 0, pool: bool = True) -> dict[str, Estimate]:
    """One estimate per value of a stimulus field (as text, sorted). With `pool`, each
    group is pooled like the whole (clustered when a stimulus gives several rows);
    otherwise the estimator is applied as is.

    When no row has the field at all (a format's optional metadata column the file lacks,
    let through by `checks.check_breakdowns`), the breakdown is skipped: one no-data
    estimate under `MISSING_GROUP` whose note says so, so the report shows the skip
    instead of one group named "" that repeats the pooled value."""
    if rows and not any(field_name in r.fields for r in rows):
        return {MISSING_GROUP: Estimate.no_data(
            "none", note=f"breakdown skipped: the data has no {field_name!r} column").of(
                GroupRef(factor=field_name, levels=[MISSING_GROUP]))}
    groups = split(rows, lambda r: str(r.fields.get(field_name, "")))
    # each group's estimate names its items (`Subset`): a reader need not parse its name
    if pool:
        return {g: pooled(rs, estimator, scale=scale, seed=seed).over(group_subset(field_name, [g]))
                .of(GroupRef(factor=field_name, levels=[g])) for g, rs in groups.items()}
    out = {}
    for g, rs in groups.items():
        e = estimator(rs)
        out[g] = (e.scaled(scale) if scale != 1.0 else e).over(group_subset(field_name, [g])).of(
            GroupRef(factor=field_name, levels=[g]))
    return out


def group_subset(field_name: str, groups: Sequence[str]) -> Subset:
    """The items of the given groups of a stimulus field (as `by_group` splits them)."""
    return Subset(where={field_name: list(groups)})


def group_contrasts(rows: Sequence[Obs], field_name: str, *, match: Callable[[Obs], str | None] | None = None,
                    paired_units: str = "", max_groups: int = MAX_GROUPS) -> ContrastFamily | None:
    """Every pairwise difference between the groups of a stimulus field (0/1 values; see
    `stats.contrasts`): Newcombe intervals on each group's effective sample size (rows of
    one stimulus clustered), z tests, Holm across the pairs. With `match` (the unit a row
    belongs to across groups, e.g. a template id or, for factor levels, the stimulus), a
    paired contrast too. None when no row has the field (the breakdown is skipped)."""
    if not rows or not any(field_name in r.fields for r in rows):
        return None
    groups = split(rows, lambda r: str(r.fields.get(field_name, "")))
    return pairwise_contrasts({g: [r.value for r in rs] for g, rs in groups.items()},
                              {g: [r.cluster for r in rs] for g, rs in groups.items()},
                              {g: [match(r) for r in rs] for g, rs in groups.items()} if match is not None else None,
                              max_groups=max_groups, paired_units=paired_units)


def contrast_estimates(fam: ContrastFamily | None, field_name: str, *, scale: float = 1.0, field: str | None = None,
                       factor: str | None = None) -> dict[str, Estimate]:
    """`contrast.<field>.<a>-<b>` (independent groups) and `contrast.<field>.<a>-<b>.paired`.
    Each is recorded as computed from the items of its two groups: of the stimulus field
    `field` (default: `field_name`, when that is not a prefixed name), or of the levels of
    the design factor `factor`."""
    out: dict[str, Estimate] = {}
    for c in fam.contrasts if fam is not None else []:
        key = f"contrast.{field_name}.{c.a}-{c.b}"
        of = factor if factor is not None else field if field is not None else field_name
        both = Subset(levels={factor: [c.a, c.b]}) if factor is not None else group_subset(of, [c.a, c.b])
        pair = GroupRef(factor=of, levels=[c.a, c.b])
        out[key] = (c.difference.scaled(scale) if scale != 1.0 else c.difference).over(both).of(pair)
        if c.paired is not None:
            out[f"{key}.paired"] = (c.paired.scaled(scale) if scale != 1.0 else c.paired).over(both).of(pair)
    return out


def defined_contrasts(est: Mapping[str, Estimate], fam: ContrastFamily, groups: Mapping[str, Estimate],
                      ) -> dict[str, Estimate]:
    """The contrast estimates (`contrast_estimates`) with every pair that involves a group
    whose own estimate is undefined made undefined too: a difference of a score that
    measures nothing is no measurement either (e.g. a group whose every pair ties)."""
    out = dict(est)
    for c in fam.contrasts:
        bad = [g for g in (c.a, c.b) if g in groups and not groups[g].has_data]
        if not bad:
            continue
        why = f"undefined: the estimate of group {bad[0]} is undefined ({groups[bad[0]].note or 'no data'})"
        # the pair's estimates by their typed groups (a level may hold "-" or ".")
        for key in [k for k, e in out.items() if e.group is not None and e.group.levels == [c.a, c.b]]:
            out[key] = Estimate.no_data(out[key].method, why).model_copy(
                update={"n": out[key].n, "subset": out[key].subset, "group": out[key].group})
    return out


def contrast_table(fam: ContrastFamily | None, field_name: str, what: str, *, scale: float = 1.0) -> Table | None:
    """One row per pair of groups, both named (`group` minus `vs`)."""
    from biasaudit.records.metric_result import Table

    if fam is None or not fam.contrasts:
        return None

    def s(x: float | None) -> float | None:
        return None if x is None else x * scale

    # a contrast that could not decide whatever the model answered is left out, counted
    # and said why (`cannot_decide`: a rule on the groups' sizes, not on the values seen)
    why = {(c.a, c.b): cannot_decide(fam, c) for c in fam.contrasts}
    shown = [c for c in fam.contrasts if why[(c.a, c.b)] is None]
    paired = any(c.paired is not None for c in shown)
    cols = ["group", "vs", "n", "n vs", "difference", "CI low", "CI high", "p", "Holm p"]
    if paired:
        cols += [f"paired {fam.paired_units or 'units'}", "paired difference", "paired CI low", "paired CI high",
                 "paired p", "paired Holm p"]
    rows = []
    for c in shown:
        d = c.difference
        row: list[Any] = [c.a, c.b, fam.groups[c.a].clusters, fam.groups[c.b].clusters, s(d.value), s(d.ci_low),
                          s(d.ci_high), c.p_value, c.p_holm]
        if paired:
            e = c.paired
            row += [e.n, s(e.value), s(e.ci_low), s(e.ci_high), c.paired_p, c.paired_p_holm] if e is not None \
                else [0, None, None, None, None, None]
        rows.append(row)
    title = f"Pairwise differences of {what} by {field_name}" if fam.all_pairs \
        else f"Largest minus smallest {what} by {field_name}"
    note = f"difference: {what} of `group` minus that of `vs`; n: stimuli per group. {fam.note}"
    left = len(fam.contrasts) - len(shown)
    if left:
        note = f"{left_out_note(fam, why, left)} {note}"
    return Table(title=title, columns=cols, rows=rows, note=note, total_rows=len(fam.contrasts) if left else None)


def left_out_note(fam: ContrastFamily, why: Mapping[tuple[str, str], str | None], left: int) -> str:
    """How many contrasts were left out and why, in plain words; when none is left, that
    the groups are too small for any contrast to decide anything."""
    k = len(fam.contrasts)
    reasons = Counter(r for r in why.values() if r is not None)
    said = "; ".join(f"{n} x {r}" if n > 1 else r for r, n in reasons.most_common(3))
    if left == k:
        sizes = sorted({g.clusters for g in fam.groups.values()})
        which = "the only contrast could not" if k == 1 else f"none of the {k} contrasts could"
        per = f"{_sizes(sizes)} {'stimulus' if sizes == [1] else 'stimuli'} per group"
        head = (f"No contrast is shown: at these group sizes ({per}) {which} show a difference between "
                "groups whatever the model answered, so per-group n cannot decide "
                "anything here. With 0/1 outcomes a contrast can decide only from 2 stimuli in each of its groups "
                "(far more to detect a realistic difference: `biasaudit plan --power`).")
    else:
        head = (f"{left} of {k} contrasts are left out because they could not decide whatever the model answered "
                f"(a rule on group sizes, not on the values seen; docs/statistics.md).")
    return f"{head} Why: {said}. Every contrast is in summary.json."


def _sizes(sizes: Sequence[int]) -> str:
    return str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}"


def group_table(ests: Mapping[str, Estimate], field_name: str, what: str) -> Table:
    """One row per group of a breakdown, the group named in its first column."""
    from biasaudit.records.metric_result import Table

    return Table(title=f"{what} by {field_name}", columns=["group", "n", what, "CI low", "CI high", "method"],
                 rows=[[g, e.n, e.value, e.ci_low, e.ci_high, e.method] for g, e in ests.items()],
                 note=f"group: the value of {field_name}; n: stimuli (the independent units) of the group.")


@dataclass
class Breakdown:
    pooled: Estimate
    cells: dict[str, Estimate]
    groups: dict[str, dict[str, Estimate]]
    """Field -> value -> estimate."""


def breakdown(rows: Sequence[Obs], estimator: Estimator = proportion, *, by: Sequence[str] = (),
              cells: Sequence[str] | None = None, scale: float = 1.0, seed: int = 0) -> Breakdown:
    return Breakdown(pooled=pooled(rows, estimator, scale=scale, seed=seed),
                     cells=by_cell(rows, estimator, cells=cells, scale=scale),
                     groups={f: by_group(rows, f, estimator, scale=scale, seed=seed) for f in by})


__all__ = ["MISSING_GROUP", "Breakdown", "Estimator", "Obs", "breakdown", "by_cell", "by_group", "clustered",
           "contrast_estimates", "contrast_table", "defined_contrasts", "group_contrasts", "group_subset", "group_table",
           "left_out_note",
           "mean", "pooled", "proportion",
           "split"]
