"""The report sections of `label_rate` (`present_rate`) and `impact_ratio`
(`present_impact`), their `MetricDef.present`: the tables and plots of what the metrics
measured, drawn from the results' records (the rates in the estimates and the per-cell
estimates, `LabelRateDetail` and `ImpactDetail`); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from biasaudit.methods.label_rates.impact import ImpactRatioParams
from biasaudit.methods.label_rates.metric import LabelRateParams
from biasaudit.methods.label_rates.records import (
    BreakdownDetail,
    CellLabels,
    ImpactDetail,
    LabelRateDetail,
)
from biasaudit.metrics.base import Presentation
from biasaudit.records.estimate import Estimate
from biasaudit.records.json import JSONValue
from biasaudit.records.metric_result import MetricResult, PlotSpec, Table
from biasaudit.spec import AuditConfig
from biasaudit.stats.disaggregate import contrast_table, group_table
from biasaudit.stats.impact import ImpactFamily


def cell_table(layer: str, labels: Sequence[str], wanted: Sequence[str],
               label_counts: Mapping[str, CellLabels], rates: Mapping[str, Estimate]) -> Table:
    """Per cell with a rate (in `label_counts` order): the units coded, each label's
    count, and the rate with its interval."""
    return Table(
        title=f"Labels of layer {layer} per prompt condition",
        columns=["cell", "coded", *labels, "rate", "CI low", "CI high"],
        rows=[[cid, n.coded, *[n.labels.get(lab, 0) for lab in labels], rates[cid].value, rates[cid].ci_low,
               rates[cid].ci_high] for cid, n in label_counts.items() if cid in rates],
        note=f"rate: share of coded units labelled {', '.join(wanted)}; Wilson 95% intervals per cell.")


def breakdown_tables(breakdowns: Sequence[BreakdownDetail], est: Mapping[str, Estimate]) -> list[Table]:
    """Per field: the rate of each group (`rate.<field>.<group>`), then the pairwise
    differences (when any)."""
    out = []
    for b in breakdowns:
        out.append(group_table({g: est[f"rate.{b.field}.{g}"] for g in b.groups}, b.field, "rate"))
        ct = contrast_table(b.contrasts, b.field, "rate")
        if ct is not None:
            out.append(ct)
    return out


def rate_plot(layer: str, wanted: Sequence[str], rates: Mapping[str, Estimate]) -> PlotSpec:
    return PlotSpec(kind="interval_bars", title=f"Rate of {', '.join(wanted)} by prompt condition",
                    xlabel="cell", ylabel="rate", labels=list(rates), estimates=list(rates.values()),
                    alt=f"Share of units the {layer} layer labels {', '.join(wanted)}, per prompt condition, "
                        "with 95% intervals.")


def impact_table(fam: ImpactFamily, unknown: int, scoring: bool = False) -> Table:
    """One categorisation's impact ratios, laid out as an LL144 bias audit summary: per
    category, the units assessed, those selected (scoring: above the median), the
    selection (scoring) rate and the impact ratio (with their intervals), then the
    four-fifths flag; an excluded category (6 RCNY 5-301(d)) keeps its count and rate."""
    rows: list[list[JSONValue]] = []
    for r in fam.rows:
        e = r.ratio
        rows.append([r.group, r.rate.clusters, r.rate.n, r.selected, r.rate.value, e.value, e.ci_low, e.ci_high,
                     r.flag, e.note])
    what = " x ".join(fam.by)
    missing = f" {unknown} coded units have no {what} value and are not in these ratios." if unknown else ""
    sel, rate = ("above median", "scoring rate") if scoring else ("selected", "selection rate")
    return Table(title=f"Impact ratios by {what}",
                 columns=["category", "stimuli", "units", sel, rate, "impact ratio", "CI low",
                          "CI high", "flag", "note"],
                 rows=rows,
                 note=f"stimuli: the independent units of a category; units: the coded answers (stimulus x prompt "
                      f"condition x sample); {rate}: {sel} / units. {fam.note}{missing}")


def impact_plot(fam: ImpactFamily) -> PlotSpec:
    rows = [r for r in fam.rows if r.ratio.has_data]
    return PlotSpec(kind="interval_bars", title=f"Impact ratio by {' x '.join(fam.by)}", xlabel=" x ".join(fam.by),
                    ylabel="impact ratio", labels=[r.group for r in rows], estimates=[r.ratio for r in rows],
                    reference=fam.bound,
                    alt=f"Each category's selection rate over the most favoured category's ({fam.reference}), with "
                        f"95% Katz intervals; the line marks {fam.bound:g} (the four-fifths rule).")


def present_rate(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """The labels and the rate per prompt condition, the rate per group of each `by` field
    with the pairwise differences; the rate per prompt condition."""
    assert isinstance(params, LabelRateParams)
    detail = LabelRateDetail.model_validate(result.detail)
    labels = [k.removeprefix("share.") for k in result.estimates if k.startswith("share.")]
    rates = result.cells.get("rate", {})
    return ([cell_table(params.layer, labels, params.labels, detail.cells, rates),
             *breakdown_tables(detail.breakdowns, result.estimates)],
            [rate_plot(params.layer, params.labels, rates)])


def present_impact(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """The impact ratios of each categorisation; those of the last (the intersection, or
    the one field) drawn."""
    assert isinstance(params, ImpactRatioParams)
    detail = ImpactDetail.model_validate(result.detail)
    primary = detail.families[-1] if detail.families else None
    return ([impact_table(fam, detail.uncategorised.get(fam.key, 0), params.rate == "scoring")
             for fam in detail.families],
            [impact_plot(primary)] if primary is not None and primary.rows else [])
