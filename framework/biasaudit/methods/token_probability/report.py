"""The token-probability bias score's report section: the tables and plots of what
`metric.compute` measured.

Pure functions of values already computed (the per-group bias scores and their
contrasts, the scored pairs, the unscorable pairs); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import PlotSpec, Table
from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.disaggregate import contrast_table

if TYPE_CHECKING:
    from biasaudit.methods.token_probability.metric import PairScore

GROUP_COLUMNS = ["group", "N", "prefers more", "ties", "bias score", "CI low", "CI high", "mean diff"]


class GroupScore(NamedTuple):
    """The bias score of one group of a breakdown field (on the 0-100 scale, ties in N)."""

    group: str
    pairs: int
    prefers_more: int
    ties: int
    estimate: Estimate
    mean_diff: float | None


class FieldScores(NamedTuple):
    """The groups of one breakdown field (`direction`, then each `by` field)."""

    field: str
    groups: list[GroupScore]
    contrasts: ContrastFamily | None
    """The pairwise differences between the groups (None: not compared)."""
    compared: bool
    """Every field but `direction`: a contrast table and a plot of its groups."""


class Unscorable(NamedTuple):
    """A pair left out of the score, and why."""

    cell: str
    stimulus: str
    reason: str


class Section(NamedTuple):
    tables: list[Table]
    plots: list[PlotSpec]


def group_table(f: FieldScores) -> Table:
    return Table(title=f"Bias score by {f.field}", columns=GROUP_COLUMNS,
                 rows=[[g.group, g.pairs, g.prefers_more, g.ties, g.estimate.value, g.estimate.ci_low,
                        g.estimate.ci_high, g.mean_diff] for g in f.groups],
                 note="Wilson 95% intervals (cluster bootstrap over stimuli when a stimulus gives several "
                      "pairs); 50 = parity; ties count in N.")


def score_plot(f: FieldScores) -> PlotSpec:
    return PlotSpec(
        kind="interval_bars", title=f"Bias score by {f.field} (95% Wilson CI)",
        xlabel=f.field, ylabel="bias score (% preferring the stereotyping sentence)",
        labels=[g.group for g in f.groups], estimates=[g.estimate for g in f.groups], reference=50.0,
        alt=f"Bar chart of the bias score per {f.field} with 95% intervals and a parity line at 50.",
    )


def diff_histogram(diffs: list[float]) -> PlotSpec:
    return PlotSpec(
        kind="histogram", title="Distribution of likelihood differences",
        xlabel="score(more) - score(less)  [log-prob]", ylabel="pairs", values=diffs, reference=0.0,
        alt="Histogram of per-pair log-likelihood differences; positive values prefer the stereotyping sentence.",
    )


def top_pairs_table(pairs: Sequence[PairScore], factors: Sequence[str], levels: Mapping[str, Mapping[str, str]],
                    max_rows: int) -> Table:
    """The pairs by decreasing |diff|, with the level of every factor (`levels`: cell -> factor -> level)."""
    top = sorted(pairs, key=lambda x: -abs(x.diff))
    return Table.cut(
        "Pairs with the largest likelihood differences",
        ["stimulus", "cell", *factors, "bias_type", "direction", "more", "less", "score(more)", "score(less)", "diff"],
        [[x.stimulus, x.cell, *[levels[x.cell].get(f, "") for f in factors], x.fields.get("bias_type", ""),
          x.fields.get("direction", ""), x.fields.get("more", ""), x.fields.get("less", ""), x.more, x.less,
          round(x.diff, 3)] for x in top], max_rows)


def unscorable_table(unscorable: Sequence[Unscorable], max_rows: int) -> Table:
    return Table.cut("Unscorable pairs", ["cell", "stimulus", "reason"],
                     [[u.cell, u.stimulus, u.reason] for u in unscorable], max_rows, full="responses.jsonl")


def section(fields: Sequence[FieldScores], diffs: list[float], pairs: Sequence[PairScore], factors: Sequence[str],
            levels: Mapping[str, Mapping[str, str]], unscorable: Sequence[Unscorable], max_rows: int) -> Section:
    """Every table and plot, in report order: per breakdown field its table (and, when
    compared, its contrast table and plot), the largest differences, the unscorable pairs;
    the histogram of differences after the per-field plots."""
    tables: list[Table] = []
    plots: list[PlotSpec] = []
    for f in fields:
        tables.append(group_table(f))
        if f.compared:
            ct = contrast_table(f.contrasts, f.field, "bias score", scale=100.0)
            if ct is not None:
                tables.append(ct)
            plots.append(score_plot(f))
    plots.append(diff_histogram(diffs))
    tables.append(top_pairs_table(pairs, factors, levels, max_rows))
    if unscorable:
        tables.append(unscorable_table(unscorable, max_rows))
    return Section(tables=tables, plots=plots)
