"""`label_rate`'s report section: the tables and plots of what `metric.compute` measured.

Pure functions of values already computed (label counts and rates per cell, the
breakdowns by stimulus field); nothing here estimates anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from biasaudit.records.estimate import Estimate
from biasaudit.records.json import JSONValue
from biasaudit.records.metric_result import PlotSpec, Table
from biasaudit.stats.disaggregate import contrast_table, group_table
from biasaudit.stats.impact import ImpactFamily

if TYPE_CHECKING:
    from biasaudit.methods.label_rates.metric import Breakdown


def cell_table(layer: str, labels: Sequence[str], wanted: Sequence[str],
               label_counts: Mapping[str, Counter[str | None]], rates: Mapping[str, Estimate]) -> Table:
    """Per cell with a rate (in `label_counts` order): the units coded, each label's
    count, and the rate with its interval."""
    return Table(
        title=f"Labels of layer {layer} per prompt condition",
        columns=["cell", "coded", *labels, "rate", "CI low", "CI high"],
        rows=[[cid, sum(n.values()), *[n.get(lab, 0) for lab in labels], rates[cid].value, rates[cid].ci_low,
               rates[cid].ci_high] for cid, n in label_counts.items() if cid in rates],
        note=f"rate: share of coded units labelled {', '.join(wanted)}; Wilson 95% intervals per cell.")


def breakdown_tables(breakdowns: Sequence[Breakdown]) -> list[Table]:
    """Per field: the rate of each group, then the pairwise differences (when any)."""
    out = []
    for b in breakdowns:
        out.append(group_table(b.groups, b.field, "rate"))
        ct = contrast_table(b.contrasts, b.field, "rate")
        if ct is not None:
            out.append(ct)
    return out


def rate_plot(layer: str, wanted: Sequence[str], rates: Mapping[str, Estimate]) -> PlotSpec:
    return PlotSpec(kind="interval_bars", title=f"Rate of {', '.join(wanted)} by prompt condition",
                    xlabel="cell", ylabel="rate", labels=list(rates), estimates=list(rates.values()),
                    alt=f"Share of units the {layer} layer labels {', '.join(wanted)}, per prompt condition, "
                        "with 95% intervals.")


def impact_table(fam: ImpactFamily, unknown: int) -> Table:
    """One categorisation's impact ratios, laid out as an LL144 bias audit summary: per
    category, the units assessed, those selected, the selection rate and the impact ratio
    (with their intervals), then the four-fifths flag."""
    rows: list[list[JSONValue]] = []
    for r in fam.rows:
        e = r.ratio
        rows.append([r.group, r.rate.clusters, r.rate.n, r.selected, r.rate.value, e.value, e.ci_low, e.ci_high,
                     r.flag, e.note])
    what = " x ".join(fam.by)
    missing = f" {unknown} coded units have no {what} value and are not in these ratios." if unknown else ""
    return Table(title=f"Impact ratios by {what}",
                 columns=["category", "stimuli", "units", "selected", "selection rate", "impact ratio", "CI low",
                          "CI high", "flag", "note"],
                 rows=rows,
                 note=f"stimuli: the independent units of a category; units: the coded answers (stimulus x prompt "
                      f"condition x sample); selection rate: selected / units. {fam.note}{missing}")


def impact_plot(fam: ImpactFamily) -> PlotSpec:
    rows = [r for r in fam.rows if r.ratio.has_data]
    return PlotSpec(kind="interval_bars", title=f"Impact ratio by {' x '.join(fam.by)}", xlabel=" x ".join(fam.by),
                    ylabel="impact ratio", labels=[r.group for r in rows], estimates=[r.ratio for r in rows],
                    reference=fam.bound,
                    alt=f"Each category's selection rate over the most favoured category's ({fam.reference}), with "
                        f"95% Katz intervals; the line marks {fam.bound:g} (the four-fifths rule).")
