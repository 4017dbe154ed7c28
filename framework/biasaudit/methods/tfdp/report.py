"""TFDP's report section: the tables and plots of what `metric.compute` measured.

Pure functions of values already computed (the per-group mean scores and their SDs, the
scored pairs, the token accounting, the unscorable pairs); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import PlotSpec, Table
from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.disaggregate import contrast_table

if TYPE_CHECKING:
    from biasaudit.methods.tfdp.metric import PairScores, TFDPParams


class GroupScores(NamedTuple):
    """One group of a breakdown field: its pairs, mean scores and their SDs."""

    group: str
    pairs: int
    estimates: dict[str, Estimate]
    """`WFS`, `PS`, `PSD`, `abs_PS` -> mean (with its SD in the note)."""
    sd: dict[str, float]
    """`WFS`, `PS`, `PSD` -> sample SD over the group's pairs (0 under two pairs)."""


class FieldScores(NamedTuple):
    """The groups of one breakdown field (the task field, then each `by` field) and (when
    asked) every pair of its groups compared, per score."""

    field: str
    groups: list[GroupScores]
    contrasts: tuple[tuple[str, ContrastFamily], ...] = ()


class TokenAccounting(NamedTuple):
    """Output tokens this probe used against a K-token continuation audit of the same answers."""

    out_tokens: int
    continuation_tokens: int
    continuation_k: int
    white_box: bool
    samples: int
    """Black-box: sampled one-token answers per sentence."""


class Unscorable(NamedTuple):
    """A pair left out, and why."""

    stimulus: str
    reason: str


class Section(NamedTuple):
    tables: list[Table]
    plots: list[PlotSpec]


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


def disparity_table(pairs: Sequence[PairScores], p: TFDPParams) -> Table:
    """The `p.max_rows` pairs with the largest |WFS|."""
    top = sorted(pairs, key=lambda x: -abs(x.wfs))[: p.max_rows]
    return Table(title="Pairs with the largest disparities", columns=[
        "stimulus", p.task_field, "S", "S'", "truth", "truth'", "top prediction", "top prediction'", "PS", "PSD", "WFS"],
        rows=[[x.stimulus, x.fields.get(p.task_field, ""), x.fields.get(p.sentence), x.fields.get(p.counter),
               x.fields.get(p.truth), x.fields.get(p.counter_truth), x.top, x.top_counter, x.ps, x.psd, x.wfs]
              for x in top])


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


def section(p: TFDPParams, fields: Sequence[FieldScores], pairs: Sequence[PairScores], tokens: TokenAccounting,
            failed: Sequence[Unscorable]) -> Section:
    """Every table and plot, in report order: one table (and a scatter and a bar plot) per
    breakdown field, the largest disparities, the token accounting, the unscorable pairs."""
    tables = []
    for f in fields:
        tables.append(field_table(f))
        tables.extend(t for k, fam in f.contrasts if (t := contrast_table(fam, f.field, f"mean {k}")) is not None)
    tables += [disparity_table(pairs, p), token_table(tokens)]
    if failed:
        tables.append(unscorable_table(failed))
    plots = [plot for f in fields for plot in (scatter_plot(f), wfs_plot(f))]
    return Section(tables=tables, plots=plots)
