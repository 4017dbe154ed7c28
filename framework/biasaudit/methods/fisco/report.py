"""FiSCo's report section (`present`, its `MetricDef.present`): the tables and plots of what
`metric.compute` measured, drawn from the result's records (the flagged shares in the
estimates, the counts, `FiscoDetail`: the per-question Welch tests, the question counts
per group, the baselines' agreement with FiSCo); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pydantic import BaseModel

from biasaudit.methods.fisco.metric import FiscoParams, weights_of
from biasaudit.methods.fisco.records import BaselineAgreement, FiscoDetail, QuestionRow
from biasaudit.metrics.base import Presentation
from biasaudit.records.estimate import Estimate
from biasaudit.records.json import JSONValue
from biasaudit.records.metric_result import MetricResult, PlotSpec, Table
from biasaudit.spec import AuditConfig
from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.disaggregate import contrast_table


class GroupShare(NamedTuple):
    """The flagged share of one group's tested questions."""

    group: str
    flagged: int
    questions: int
    estimate: Estimate


class FieldShares(NamedTuple):
    """The flagged share per group of one `by` field, in report order, and (when asked)
    every pair of its groups compared."""

    field: str
    groups: list[GroupShare]
    contrasts: ContrastFamily | None = None


class Section(NamedTuple):
    tables: list[Table]
    plots: list[PlotSpec]


def _share_row(label: str, s: GroupShare) -> list[JSONValue]:
    return [label, s.flagged, s.questions, s.estimate.value, s.estimate.ci_low, s.estimate.ci_high]


def share_table(overall: GroupShare, fields: Sequence[FieldShares]) -> Table:
    """The flagged share over every tested question (`overall.group`: the axis), then per group."""
    rows = [_share_row(overall.group, overall)]
    rows += [_share_row(f"{f.field}={g.group}", g) for f in fields for g in f.groups]
    return Table(title="Share of questions flagged", columns=["axis / group", "flagged", "questions", "share",
                                                              "CI low", "CI high"], rows=rows)


def question_table(axis: str, results: Sequence[QuestionRow], alpha: float,
                   weights: tuple[float, float, float]) -> Table:
    return Table(
        title=f"Per question ({axis})",
        columns=["question", "groups compared", "t", "df", "p (Holm)", "flagged", "mean inter", "mean intra", "n inter",
                 "n intra", "note"],
        rows=[[r.stimulus, r.pair, r.t, r.df, r.p, r.flagged if r.t is not None else None, r.mean_inter, r.mean_intra,
               r.n_inter, r.n_intra, r.note] for r in results],
        note=f"Welch's t = (mean intra - mean inter) / se, the sign of the authors' code (positive: answers differ "
             f"more across groups than within them; the paper's equation 2 writes inter - intra); flagged when "
             f"p < {alpha} and inter < intra. "
             f"Similarity weights (E, N, C) = {weights}.")


def baseline_table(agreements: Sequence[BaselineAgreement]) -> Table:
    return Table(title="Baselines: same Welch test, other similarity", columns=[
        "baseline", "flagged", "questions", "agreement with FiSCo", "Cohen's kappa"],
        rows=[[a.baseline, a.flagged, a.questions, a.agreement, a.kappa] for a in agreements],
        note="ccosine: embedding cosine; crougel: ROUGE-L F (rouge-score); cbleu: sentence BLEU (sacrebleu), both "
             "directions.")


def t_histogram(ts: list[float]) -> PlotSpec:
    return PlotSpec(kind="histogram", title="Distribution of Welch t across questions", xlabel="t (intra - inter)",
                    ylabel="questions", values=ts, reference=0.0,
                    alt="Histogram of per-question Welch t statistics; negative values mean answers differ more "
                        "across groups than within.")


def share_plot(f: FieldShares) -> PlotSpec:
    return PlotSpec(kind="interval_bars", title=f"Share of questions flagged by {f.field}", xlabel=f.field,
                    ylabel="share flagged", labels=[g.group for g in f.groups], estimates=[g.estimate for g in f.groups],
                    alt=f"Share of flagged questions per {f.field} with Wilson intervals.")


def evidence_tables(results: Sequence[QuestionRow]) -> list[Table]:
    """The claims not entailed across groups, one table per flagged question that has any."""
    return [Table(title=f"Evidence for flagged question {r.stimulus}: claims not entailed across groups",
                  columns=["claim from group", "checked against group", "claim", "label"],
                  rows=r.evidence, note="N = neutral, C = contradiction")
            for r in results if r.flagged and r.evidence]


def section(axis: str, alpha: float, weights: tuple[float, float, float], results: Sequence[QuestionRow],
            overall: GroupShare, fields: Sequence[FieldShares], agreements: Sequence[BaselineAgreement]) -> Section:
    """Every table and plot, in report order: the flagged shares, the per-question tests, the
    baselines (when any was compared), the evidence of flagged questions; the histogram of t,
    then one plot per `by` field."""
    tables = [share_table(overall, fields), question_table(axis, results, alpha, weights)]
    if agreements:
        tables.append(baseline_table(agreements))
    tables += [t for f in fields if (t := contrast_table(f.contrasts, f.field, "flagged share")) is not None]
    tables += evidence_tables(results)
    plots = [t_histogram([r.t for r in results if r.t is not None]), *[share_plot(f) for f in fields]]
    return Section(tables=tables, plots=plots)


def present(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """`section` of the result's records: the overall flagged share is the headline
    (`counts.flagged` of `counts.tested` questions), each group's its estimate
    `flagged_share.<field>.<group>`."""
    assert isinstance(params, FiscoParams)
    detail = FiscoDetail.model_validate(result.detail)
    est = result.estimates
    overall = GroupShare(group=params.axis, flagged=result.counts["flagged"], questions=result.counts["tested"],
                         estimate=est["flagged_share"])
    fields = [FieldShares(field=f.field, contrasts=f.contrasts,
                          groups=[GroupShare(group=g.group, flagged=g.flagged, questions=g.questions,
                                             estimate=est[f"flagged_share.{f.field}.{g.group}"]) for g in f.groups])
              for f in detail.fields]
    shown = section(params.axis, params.alpha, weights_of(params), detail.questions, overall, fields,
                    detail.agreements)
    return shown.tables, shown.plots
