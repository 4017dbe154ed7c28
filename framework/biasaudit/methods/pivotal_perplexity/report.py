"""Pivotal-token perplexity's report section: the tables and plots of what `metric.compute`
measured, declared after it from the result's records (`present`).

Pure functions of values already computed: the per-condition estimates (the result's
`cells`), the per-class and per-group estimates, the item rows (each prompt pair's pivotal
normalized proportion), and the method's own record in `MetricResult.detail`
(`PivotalDetail`: prompt pairs per condition, the groups' sizes, normalized proportions
and contrasts, the other classes' normalized proportions, the unscorable pairs); nothing
here estimates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel

from biasaudit.methods.pivotal_perplexity.detail import FieldDetail, PivotalDetail, Unscorable
from biasaudit.methods.pivotal_perplexity.metric import CLASSES
from biasaudit.metrics.base import Presentation
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult, PlotSpec, Table
from biasaudit.spec import AuditConfig
from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.disaggregate import contrast_table


class ConditionScores(NamedTuple):
    """One prompt condition (cell): its prompt pairs, accuracy and pivotal normalized proportion."""

    cell: str
    pairs: int
    accuracy: Estimate
    normalized: Estimate


class GroupScores(NamedTuple):
    """One group of a `by` field: its stimuli, accuracy and pivotal normalized proportion."""

    group: str
    stimuli: int
    accuracy: Estimate
    normalized: Estimate


class FieldBreakdown(NamedTuple):
    """The groups of one `by` field, in report order, and (when asked) every pair of its
    groups' accuracies compared."""

    field: str
    groups: list[GroupScores]
    contrasts: ContrastFamily | None = None


def _intervals(e: Estimate) -> list[Any]:
    return [e.value, e.ci_low, e.ci_high]


def condition_table(conditions: Sequence[ConditionScores]) -> Table:
    return Table(title="By prompt condition (frame wording x presentation order)",
                 columns=["cell", "pairs", "accuracy", "CI low", "CI high", "pivotal normalized", "CI low", "CI high"],
                 rows=[[c.cell, c.pairs, *_intervals(c.accuracy), *_intervals(c.normalized)] for c in conditions],
                 note="The paper found accuracy sensitive to presentation order; compare the rows.")


def group_table(field: str, groups: Sequence[GroupScores]) -> Table:
    return Table(title=f"By {field}", columns=[field, "stimuli", "accuracy", "CI low", "CI high",
                                               "pivotal normalized", "CI low", "CI high"],
                 rows=[[g.group, g.stimuli, *_intervals(g.accuracy), *_intervals(g.normalized)] for g in groups])


def accuracy_plot(field: str, groups: Sequence[GroupScores]) -> PlotSpec:
    return PlotSpec(kind="interval_bars", title=f"Accuracy by {field} (95% Wilson interval)", xlabel=field,
                    ylabel="accuracy", labels=[g.group for g in groups], estimates=[g.accuracy for g in groups],
                    reference=0.5, alt=f"Accuracy per {field} with 95% intervals; 0.5 is chance.")


def normalized_histogram(series: Mapping[str, list[float | None]]) -> PlotSpec:
    """Overlaid histograms of the normalized proportion, one series per token class."""
    return PlotSpec(
        kind="multi_histogram", title="Normalized proportion of the PPL difference",
        xlabel="normalized proportion (mean share of the class minus median share)", ylabel="prompt pairs",
        series=dict(series), reference=0.0,
        alt="Overlaid histograms of the normalized proportion for pivotal, period and other tokens; "
            "pivotal tokens to the right of the others means they explain more of the perplexity difference.",
    )


def class_plot(classes: Mapping[str, Estimate]) -> PlotSpec:
    """Mean normalized proportion per token class (class -> its estimate)."""
    return PlotSpec(
        kind="interval_bars", title="Normalized proportion by token class (95% cluster-robust t)",
        xlabel="token class", ylabel="normalized proportion", labels=list(classes),
        estimates=list(classes.values()), reference=0.0,
        alt="Mean normalized proportion for pivotal, period and other tokens with intervals.",
    )


def unscorable_table(skipped: Sequence[Unscorable]) -> Table:
    return Table(title="Unscorable prompt pairs", columns=["stimulus", "cell", "reason"],
                 rows=[[u.stimulus, u.cell, u.reason] for u in skipped])


def section(conditions: Sequence[ConditionScores], breakdowns: Sequence[FieldBreakdown],
            series: Mapping[str, list[float | None]], classes: Mapping[str, Estimate],
            skipped: Sequence[Unscorable]) -> Presentation:
    """Every table and plot, in report order: per condition, per `by` field (a table and an
    accuracy plot each), the unscorable pairs; the histogram and the class bars first."""
    tables = [condition_table(conditions)]
    for b in breakdowns:
        tables.append(group_table(b.field, b.groups))
        if (ct := contrast_table(b.contrasts, b.field, "accuracy")) is not None:
            tables.append(ct)
    if skipped:
        tables.append(unscorable_table(skipped))
    plots = [normalized_histogram(series), class_plot(classes),
             *[accuracy_plot(b.field, b.groups) for b in breakdowns]]
    return tables, plots


def _breakdown(f: FieldDetail, est: Mapping[str, Estimate]) -> FieldBreakdown:
    return FieldBreakdown(field=f.field, contrasts=f.contrasts, groups=[
        GroupScores(group=g.group, stimuli=g.stimuli, accuracy=est[f"accuracy.{f.field}.{g.group}"],
                    normalized=g.normalized) for g in f.groups])


def present(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """The section of a computed result: conditions from its `cells`, classes and groups'
    accuracies from its estimates, pivotal proportions from its item rows, the rest from
    its `PivotalDetail`."""
    detail = PivotalDetail.model_validate(result.detail)
    conditions = [ConditionScores(cell=c, pairs=n, accuracy=result.cells["accuracy"][c],
                                  normalized=result.cells["pivotal.normalized"][c]) for c, n in detail.pairs.items()]
    series: dict[str, list[float | None]] = {"pivotal": [float(x.diff) for x in result.items if x.diff is not None]}
    for cls in CLASSES[1:]:
        series[cls] = list[float | None](detail.normalized[cls])
    return section(conditions, [_breakdown(f, result.estimates) for f in detail.breakdowns], series,
                   {c: result.estimates[f"{c}.normalized"] for c in CLASSES}, detail.unscorable)
