"""TFDP's report section: the tables and plots of what `metric.compute` measured, declared
after it from the result's records (`present`).

Pure functions of values already computed: the counts (output tokens), and the method's
own record in `MetricResult.detail` (`TFDPDetail`: the per-group mean scores and their
SDs as measured, the pairs with the largest disparities, the samples per sentence, the
unscorable pairs); nothing here estimates anything. The tables show the scores even when
every estimate is undefined (scores fixed by the kernel: shown, never judged).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pydantic import BaseModel

from biasaudit.methods.tfdp.detail import (
    Disparity,
    FieldScores,
    GroupScores,
    TFDPDetail,
    Unscorable,
)
from biasaudit.methods.tfdp.metric import TFDPParams
from biasaudit.metrics.base import Presentation
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult, PlotSpec, Table
from biasaudit.spec import AuditConfig
from biasaudit.stats.disaggregate import contrast_table


class TokenAccounting(NamedTuple):
    """Output tokens this probe used against a K-token continuation audit of the same answers."""

    out_tokens: int
    continuation_tokens: int
    continuation_k: int
    white_box: bool
    samples: int
    """Black-box: sampled one-token answers per sentence."""


def field_table(f: FieldScores) -> Table:
    rows = [[g.group, g.pairs, g.estimates["WFS"].value, g.sd["WFS"], g.estimates["PS"].value, g.sd["PS"],
             g.estimates["PSD"].value, g.sd["PSD"], g.estimates["abs_PS"].value] for g in f.groups]
    return Table(title=f"TFDP scores by {f.field}", columns=[f.field, "pairs", "mean WFS", "SD", "mean PS", "SD",
                                                             "mean PSD", "SD", "mean |PS|"], rows=rows,
                 note="parity task: 0 is ideal; factuality task: positive is ideal.")


def _labels(f: FieldScores) -> list[str]:
    return [g.group or "(all)" for g in f.groups]


def scatter_plot(f: FieldScores) -> PlotSpec:
    points: list[list[float | None]] = [
        [g.estimates["PS"].value, g.estimates["abs_PS"].value, g.estimates["PSD"].value] for g in f.groups]
    return PlotSpec(kind="scatter", title=f"Mean PS vs mean |PS| by {f.field} (size: mean PSD)",
                    xlabel="mean PS", ylabel="mean |PS|", labels=_labels(f), points=points, reference=0.0,
                    alt=f"Scatter of mean preference score against its mean magnitude per {f.field}; bubble size is "
                        "the mean prediction-set divergence.")


def _mean_sd_bar(g: GroupScores) -> Estimate:
    m_ = g.estimates["WFS"].value or 0.0
    return Estimate(value=m_, ci_low=m_ - g.sd["WFS"], ci_high=m_ + g.sd["WFS"], n=g.pairs, method="mean±SD")


def wfs_plot(f: FieldScores) -> PlotSpec:
    return PlotSpec(kind="interval_bars", title=f"Mean WFS ± SD by {f.field}", xlabel=f.field,
                    ylabel="WFS", labels=_labels(f), estimates=[_mean_sd_bar(g) for g in f.groups], reference=0.0,
                    alt=f"Mean weighted final score per {f.field} with one standard deviation either side, as in the "
                        "paper; 0 is parity.")


def disparity_table(top: Sequence[Disparity], p: TFDPParams) -> Table:
    """The pairs with the largest |WFS|."""
    return Table(title="Pairs with the largest disparities", columns=[
        "stimulus", p.task_field, "S", "S'", "truth", "truth'", "top prediction", "top prediction'", "PS", "PSD", "WFS"],
        rows=[[x.stimulus, x.task, x.sentence, x.counter, x.truth, x.counter_truth, x.top, x.top_counter, x.ps, x.psd,
               x.wfs] for x in top])


def token_table(t: TokenAccounting) -> Table:
    return Table(title="Token accounting", columns=["quantity", "value"], rows=[
        ["output tokens used by this probe", t.out_tokens],
        [f"output tokens of a {t.continuation_k}-token continuation audit (pairs x 2 x n x K)", t.continuation_tokens],
        ["ratio (continuation / probe)", (t.continuation_tokens / t.out_tokens) if t.out_tokens else None],
        ["mode", "white-box: one next-token distribution per sentence" if t.white_box
         else f"black-box: {t.samples} sampled one-token answers per sentence"],
    ])


def unscorable_table(failed: Sequence[Unscorable]) -> Table:
    return Table(title="Unscorable pairs", columns=["stimulus", "reason"], rows=[[u.stimulus, u.reason] for u in failed])


def present(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """Every table and plot, in report order: one table (and a scatter and a bar plot) per
    breakdown field, the largest disparities, the token accounting, the unscorable pairs."""
    assert isinstance(params, TFDPParams)
    detail = TFDPDetail.model_validate(result.detail)
    tables = []
    for f in detail.breakdowns:
        tables.append(field_table(f))
        tables.extend(t for k, fam in f.contrasts if (t := contrast_table(fam, f.field, f"mean {k}")) is not None)
    cont = params.continuation_k
    tokens = TokenAccounting(out_tokens=result.counts["output_tokens"],
                             continuation_tokens=result.counts[f"tokens_{cont}_token_continuation"], continuation_k=cont,
                             white_box=cfg.probe.kind == "next_token", samples=detail.samples)
    tables += [disparity_table(detail.largest, params), token_table(tokens)]
    if detail.unscorable:
        tables.append(unscorable_table(detail.unscorable))
    plots = [plot for f in detail.breakdowns for plot in (scatter_plot(f), wfs_plot(f))]
    return tables, plots
