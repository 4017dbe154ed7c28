"""Pivotal-token perplexity's report section: the tables and plots of what `metric.compute`
measured.

Pure functions of values already computed (per-condition and per-group estimates, the
per-class estimates, the normalized proportions of every prompt pair, the unscorable
pairs); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import PlotSpec, Table
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


class Unscorable(NamedTuple):
    """A prompt pair left out, and why."""

    stimulus: str
    cell: str
    reason: str


class Section(NamedTuple):
    tables: list[Table]
    plots: list[PlotSpec]


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
        kind="interval_bars", title="Normalized proportion by token class (95% cluster bootstrap)",
        xlabel="token class", ylabel="normalized proportion", labels=list(classes),
        estimates=list(classes.values()), reference=0.0,
        alt="Mean normalized proportion for pivotal, period and other tokens with intervals.",
    )


def unscorable_table(skipped: Sequence[Unscorable]) -> Table:
    return Table(title="Unscorable prompt pairs", columns=["stimulus", "cell", "reason"],
                 rows=[[u.stimulus, u.cell, u.reason] for u in skipped])


def section(conditions: Sequence[ConditionScores], breakdowns: Sequence[FieldBreakdown],
            series: Mapping[str, list[float | None]], classes: Mapping[str, Estimate],
            skipped: Sequence[Unscorable]) -> Section:
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
    return Section(tables=tables, plots=plots)
