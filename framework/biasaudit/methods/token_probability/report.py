"""The token-probability bias score's report section: the tables and plots of what
`metric.compute` measured, declared after it from the result's records (`present`).

Pure functions of values already computed: the item rows (one per scored pair: its
difference, its cell and levels, the stimulus's fields), and the method's own record in
`MetricResult.detail` (`BiasScoreDetail`: the per-group bias scores and their contrasts,
each pair's two scores, the unscorable pairs); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from biasaudit.methods.token_probability.detail import (
    BiasScoreDetail,
    FieldScores,
    PairScores,
    Unscorable,
)
from biasaudit.metrics.base import Presentation
from biasaudit.records.metric_result import ItemRow, MetricResult, PlotSpec, Table
from biasaudit.spec import AuditConfig
from biasaudit.stats.disaggregate import contrast_table

GROUP_COLUMNS = ["group", "N", "prefers more", "ties", "bias score", "CI low", "CI high", "mean diff"]


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


def _diff(item: ItemRow) -> float:
    assert item.diff is not None  # every scored pair has its difference
    return float(item.diff)


def top_pairs_table(items: Sequence[ItemRow], scores: Sequence[PairScores], factors: Sequence[str],
                    max_rows: int) -> Table:
    """The pairs by decreasing |diff|, with the level of every factor (`scores`: the two
    scores of each item row, in the same order)."""
    top = sorted(zip(items, scores, strict=True), key=lambda x: -abs(_diff(x[0])))
    return Table.cut(
        "Pairs with the largest likelihood differences",
        ["stimulus", "cell", *factors, "bias_type", "direction", "more", "less", "score(more)", "score(less)", "diff"],
        [[x.stimulus, x.cell, *[(x.levels or {}).get(f, "") for f in factors], x.fields.get("bias_type", ""),
          x.fields.get("direction", ""), x.fields.get("more", ""), x.fields.get("less", ""), s.more, s.less,
          round(_diff(x), 3)] for x, s in top], max_rows)


def unscorable_table(unscorable: Sequence[Unscorable], max_rows: int) -> Table:
    return Table.cut("Unscorable pairs", ["cell", "stimulus", "reason"],
                     [[u.cell, u.stimulus, u.reason] for u in unscorable], max_rows, full="responses.jsonl")


def present(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """Every table and plot, in report order: per breakdown field its table (and, when
    compared, its contrast table and plot), the largest differences, the unscorable pairs;
    the histogram of differences after the per-field plots."""
    detail = BiasScoreDetail.model_validate(result.detail)
    tables: list[Table] = []
    plots: list[PlotSpec] = []
    for f in detail.breakdowns:
        tables.append(group_table(f))
        if f.compared:
            ct = contrast_table(f.contrasts, f.field, "bias score", scale=100.0)
            if ct is not None:
                tables.append(ct)
            plots.append(score_plot(f))
    plots.append(diff_histogram([_diff(x) for x in result.items]))
    # one column per factor: the condition each pair was scored under
    tables.append(top_pairs_table(result.items, detail.scores, list(cfg.factors), cfg.report.max_rows))
    if detail.unscorable:
        tables.append(unscorable_table(detail.unscorable, cfg.report.max_rows))
    return tables, plots
