"""The NLI bias scores' report section, and that of the token-probability versus NLI
analysis across runs: the tables and plots of what `metric.compute` and
`compare.tp_vs_nli_data` computed, the metric's declared after it from the result's
records (`present`).

Pure functions of values already computed (the M1-M11 estimates and the per-group M6 and
M9 of the result; from the method's own record in `MetricResult.detail`, `NLIBiasDetail`:
the groups' sizes and contrasts, the mean entailment probabilities, the unscorable
triples; the cross-run fits); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from pydantic import BaseModel

from biasaudit.methods.base import CrossRunSection
from biasaudit.methods.nli_bias.detail import FieldGroups, MeanEntailment, NLIBiasDetail, Unscorable
from biasaudit.methods.nli_bias.metric import CONDITION_TEXT, OTHER_SCALE, RECOMMENDED, TP_SCALE
from biasaudit.metrics.base import Presentation
from biasaudit.records.estimate import Estimate
from biasaudit.records.json import JSONValue, json_object
from biasaudit.records.metric_result import MetricResult, PlotSpec, Table
from biasaudit.spec import AuditConfig
from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.disaggregate import contrast_table

if TYPE_CHECKING:
    from biasaudit.methods.nli_bias.compare import TpVsNli

SCORE_COLUMNS = ["metric", "condition", "score", "CI low", "CI high", "n"]


class MetricScore(NamedTuple):
    """One of M1-M11: its condition (in words) and its estimate."""

    name: str
    condition: str
    estimate: Estimate
    recommended: bool


class GroupScores(NamedTuple):
    """M6 and M9 over the triples of one group of a `by` field."""

    group: str
    triples: int
    m6: Estimate
    m9: Estimate


class FieldScores(NamedTuple):
    """The groups of one `by` field, in report order, and (when asked) their pairwise
    contrasts per score."""

    field: str
    groups: list[GroupScores]
    contrasts: tuple[tuple[str, ContrastFamily], ...] = ()


def _score_row(label: str, s: MetricScore) -> list[JSONValue]:
    e = s.estimate
    return [label, s.condition, e.value, e.ci_low, e.ci_high, e.n]


def tp_scale_table(scores: Sequence[MetricScore]) -> Table:
    return Table(title="TP-scale NLI metrics (50 = parity)", columns=SCORE_COLUMNS,
                 rows=[_score_row(s.name + (" (recommended)" if s.recommended else ""), s) for s in scores],
                 note="Percentage of triples where the condition holds; Wilson 95% intervals.")


def other_scale_table(scores: Sequence[MetricScore]) -> Table:
    return Table(title="Other NLI metrics (0 = no bias; not comparable with TP scores)", columns=SCORE_COLUMNS,
                 rows=[_score_row(s.name, s) for s in scores])


def group_table(f: FieldScores) -> Table:
    return Table(title=f"M6 and M9 by {f.field}",
                 columns=[f.field, "n", "M6", "CI low", "CI high", "M9", "CI low", "CI high"],
                 rows=[[g.group, g.triples, g.m6.value, g.m6.ci_low, g.m6.ci_high, g.m9.value, g.m9.ci_low,
                        g.m9.ci_high] for g in f.groups])


def mean_entailment_table(m: MeanEntailment) -> Table:
    return Table(title="Mean entailment probability", columns=["premise", "mean pE"],
                 rows=[["stereotypical", m.stereo], ["counter-stereotypical", m.counter]])


def unscorable_table(skipped: Sequence[Unscorable]) -> Table:
    return Table(title="Unscorable triples", columns=["stimulus", "reason"],
                 rows=[[u.stimulus, u.reason] for u in skipped])


def tp_scale_plot(scores: Sequence[MetricScore]) -> PlotSpec:
    return PlotSpec(kind="interval_bars", title="TP-scale NLI bias scores (95% Wilson CI)", xlabel="metric",
                    ylabel="bias score (%)", labels=[s.name for s in scores], estimates=[s.estimate for s in scores],
                    reference=50.0, alt="Bias scores M1 and M5 to M9 with intervals; 50 is parity.")


def other_scale_plot(scores: Sequence[MetricScore]) -> PlotSpec:
    return PlotSpec(kind="interval_bars", title="Other NLI bias scores (95% Wilson CI)", xlabel="metric",
                    ylabel="bias score (%)", labels=[s.name for s in scores], estimates=[s.estimate for s in scores],
                    alt="Bias scores M2 to M4, M10 and M11 with intervals; 0 is no bias.")


def metric_scores(names: Sequence[str], est: dict[str, Estimate]) -> list[MetricScore]:
    """The metrics `names` as the report lists them: each with its condition in words and its estimate."""
    return [MetricScore(name=m, condition=CONDITION_TEXT[m], estimate=est[m], recommended=m in RECOMMENDED)
            for m in names]


def _field_scores(f: FieldGroups, est: dict[str, Estimate]) -> FieldScores:
    """A `by` field's groups with their M6 and M9 (the result's estimates)."""
    return FieldScores(field=f.field, contrasts=tuple(f.contrasts), groups=[
        GroupScores(group=g.group, triples=g.triples, m6=est[f"M6.{f.field}.{g.group}"],
                    m9=est[f"M9.{f.field}.{g.group}"]) for g in f.groups])


def section(tp_scale: Sequence[MetricScore], other_scale: Sequence[MetricScore], fields: Sequence[FieldScores],
            mean_e: MeanEntailment, skipped: Sequence[Unscorable]) -> Presentation:
    """Every table and plot, in report order: the TP-scale and the other metrics, M6 and M9
    per `by` field, the mean entailment probabilities, the unscorable triples; a plot of each scale."""
    tables = [tp_scale_table(tp_scale), other_scale_table(other_scale)]
    for f in fields:
        tables.append(group_table(f))
        tables.extend(t for m, fam in f.contrasts if (t := contrast_table(fam, f.field, m, scale=100.0)) is not None)
    tables.append(mean_entailment_table(mean_e))
    if skipped:
        tables.append(unscorable_table(skipped))
    return tables, [tp_scale_plot(tp_scale), other_scale_plot(other_scale)]


def present(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """The section of a computed result: M1-M11 from its estimates, the rest from its
    `NLIBiasDetail`."""
    detail = NLIBiasDetail.model_validate(result.detail)
    est = result.estimates
    return section(metric_scores(TP_SCALE, est), metric_scores(OTHER_SCALE, est),
                   [_field_scores(f, est) for f in detail.breakdowns], detail.mean_entailment, detail.unscorable)


# -- token probability versus NLI across runs (`biasaudit compare`) ----------------------------

def cross_run_tables(t: TpVsNli) -> list[Table]:
    labels = t["r2_matrix"]["labels"]
    return [
        Table(title="Scores per subject", columns=["subject", "TP bias score", *labels],
              rows=[[s, t["tp"][s], *[t["nli"][s][k] for k in labels]] for s in t["subjects"]]),
        Table(title="Linear fit of each NLI metric on the TP score",
              columns=["metric", "R²", "Pearson r", "p (slope, Wald t)", "slope", "n", "note"], rows=t["fits"],
              note="* recommended metrics (M6, M9)."),
        Table(title="Mutual information with the per-item difference (NLI: log pE(S) − log pE(S~))",
              columns=["factor", "level", "MI (nats)", "factor MI (nats)"], rows=t["mi_nli"],
              note="sklearn mutual_info_regression on one-hot factors; top 10."),
        Table(title="Mutual information with the per-item difference (TP: score(more) − score(less))",
              columns=["factor", "level", "MI (nats)", "factor MI (nats)"], rows=t["mi_tp"]),
    ]


def r2_heatmap(t: TpVsNli) -> PlotSpec:
    return PlotSpec(kind="heatmap", title="Pairwise R² among NLI metrics", labels=t["r2_matrix"]["labels"],
                    matrix=t["r2_matrix"]["values"], ylabel="R²",
                    alt="Heatmap of pairwise R squared between the eleven NLI bias metrics across subjects.")


def cross_run_section(t: TpVsNli) -> CrossRunSection:
    return CrossRunSection(title="Token probability versus NLI across subjects",
                           note=f"Subjects: {', '.join(t['subjects'])}. {t['note']}".strip(),
                           tables=cross_run_tables(t), plots=[r2_heatmap(t)], data=json_object(t))
