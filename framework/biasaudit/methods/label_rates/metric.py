"""`label_rate`: how often a coding layer gives some labels (refusals, endorsements...),
pooled, per prompt condition and per group, with the spread across conditions.

The rate is over the units the layer coded; abstentions, units the layer does not apply
to and failures are counted apart (and shown as reliability items), not in the base.

The tables and plots of the report section are declared by `report.present_rate` from
what `compute` returns: the estimates, the per-cell rates and `LabelRateDetail`
(records.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.methods.label_rates.records import BreakdownDetail, CellLabels, LabelRateDetail
from biasaudit.metrics.base import MetricContext
from biasaudit.metrics.validity import valid_share
from biasaudit.records.codes import Code, Unit
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult, ReliabilityItem, ValidityFlag
from biasaudit.stats import ContrastFamily, cell_spread, wilson
from biasaudit.stats.disaggregate import (
    Obs,
    by_cell,
    by_group,
    contrast_estimates,
    group_contrasts,
    pooled,
    proportion,
)


class LabelRateParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    layer: str
    """The coding layer."""
    labels: list[str] = Field(min_length=1)
    """The labels whose rate is measured (e.g. [refuse])."""
    by: list[str] = []
    """Stimulus fields to break the rate down by: each group's rate, and every pairwise
    difference between groups (`contrast.<field>.<a>-<b>`, Newcombe 95% interval, Holm
    across the pairs)."""
    match: str | None = None
    """Stimulus field that names the item a stimulus fills for each group (e.g. a template
    id, where a template is filled once per group): with it, each pair of groups is also
    compared within items (`contrast.<field>.<a>-<b>.paired`: paired t over the items in
    both groups)."""
    seed: int = 0
    """Seed of the cluster-bootstrap intervals."""


Coded = tuple[Unit, Code]
"""A unit the layer coded, with its code."""


@dataclass(frozen=True)
class Breakdown:
    """The rate by one stimulus field: each group's, and every pair of groups compared."""

    field: str
    groups: dict[str, Estimate]
    contrasts: ContrastFamily | None

    def estimates(self) -> dict[str, Estimate]:
        """`rate.<field>.<group>`, then `contrast.<field>.<a>-<b>` (and `.paired`)."""
        out = {f"rate.{self.field}.{g}": e for g, e in self.groups.items()}
        out.update(contrast_estimates(self.contrasts, self.field))
        return out


def breakdown(rows: list[Obs], fld: str, p: LabelRateParams) -> Breakdown:
    match = p.match
    fam = group_contrasts(rows, fld, paired_units="item" if match else "",
                          match=(lambda o: None if o.fields.get(match) is None else str(o.fields[match]))
                          if match else None)
    return Breakdown(field=fld, groups=by_group(rows, fld, proportion, seed=p.seed), contrasts=fam)


def label_shares(coded: list[Coded], labels: list[str], p: LabelRateParams) -> dict[str, Estimate]:
    """`share.<label>`: how often the layer gives each of its labels (pooled)."""
    return {f"share.{lab}": pooled([Obs(cell=u.cell, cluster=u.stimulus, value=1.0 if c.label == lab else 0.0)
                                    for u, c in coded], proportion, seed=p.seed) for lab in labels}


def reliability_items(layer: str, status: Mapping[str, int]) -> list[ReliabilityItem]:
    n_units = sum(status.values())
    return [
        ReliabilityItem(name=f"{layer}: abstentions", estimate=wilson(status.get("abstain", 0), n_units),
                        note="units the layer could not code; left out of the rate"),
        ReliabilityItem(name=f"{layer}: failed", estimate=wilson(status.get("failed", 0), n_units),
                        note="units whose response or coding request failed; left out of the rate"),
    ]


def coded_share_flags(ctx: MetricContext, status: Mapping[str, int], n_coded: int) -> list[ValidityFlag]:
    """Blocking when too few of the units the layer applies to were coded."""
    applicable = sum(status.values()) - status.get("not_applicable", 0)
    flag = valid_share(n_coded, applicable, "units", ctx.config.validity.min_valid_share,
                       invalid={k: status.get(k, 0) for k in ("abstain", "failed")})
    return [flag] if flag else []


def coded_units(ctx: MetricContext, layer: str) -> tuple[Counter[str], list[Coded]]:
    """How many units the layer gave each status, and the units it coded (in unit order)."""
    codes = ctx.layer_codes(layer)
    status: Counter[str] = Counter(c.status for c in codes.values())
    return status, [(u, codes[u.id]) for u in ctx.units if u.id in codes and codes[u.id].coded]


def _layer_labels(ctx: MetricContext, p: LabelRateParams, coded: list[Coded]) -> list[str]:
    """The layer's declared labels, else those it gave (sorted)."""
    return list(ctx.layers[p.layer].labels or sorted({c.label for _, c in coded if c.label is not None}))


def _cell_labels(codes: list[Code]) -> CellLabels:
    """The codes of one cell: how many, and how many of each label."""
    return CellLabels(coded=len(codes), labels=dict(Counter(c.label for c in codes if c.label is not None)))


def compute(ctx: MetricContext, metric_id: str, params: BaseModel) -> MetricResult:
    assert isinstance(params, LabelRateParams)
    p = params
    wanted = set(p.labels)
    status, coded = coded_units(ctx, p.layer)
    rows = [Obs(cell=u.cell, cluster=u.stimulus, value=1.0 if c.label in wanted else 0.0, fields=u.fields)
            for u, c in coded]
    cell_ids = [c.id for c in ctx.plan.cells]
    labels = _layer_labels(ctx, p, coded)
    est: dict[str, Estimate] = {"rate": pooled(rows, proportion, seed=p.seed), **label_shares(coded, labels, p)}
    breakdowns = [breakdown(rows, fld, p) for fld in p.by]
    for b in breakdowns:
        est.update(b.estimates())
    rates = by_cell(rows, proportion, cells=cell_ids)
    spread = cell_spread([o.cell for o in rows], [o.cluster for o in rows], [o.value for o in rows], seed=p.seed)
    detail = LabelRateDetail(cells={cid: _cell_labels([c for u, c in coded if u.cell == cid]) for cid in rates},
                             breakdowns=[BreakdownDetail(field=b.field, groups=list(b.groups), contrasts=b.contrasts)
                                         for b in breakdowns])
    return MetricResult(
        validity=coded_share_flags(ctx, status, len(coded)),
        id=metric_id, name="label_rate", title=f"Rate of {', '.join(p.labels)} ({p.layer} layer)", headline="rate",
        estimates=est, cells={"rate": rates}, spread={"rate": spread} if spread else {},
        reliability=reliability_items(p.layer, status),
        reference_note=f"Share of the units coded by the {p.layer} layer that it labels {', '.join(p.labels)}. "
                       "Pooled over prompt conditions with a Wilson interval on the design's effective n "
                       "(clustered by stimulus) when a stimulus gives several units.",
        items=[ctx.item(u.stimulus, u.cell, u.fields, outcome=int(c.label in wanted)) for u, c in coded],
        counts={"units": sum(status.values()), "coded": len(coded),
                **{k: status.get(k, 0) for k in ("abstain", "not_applicable", "failed")}},
        detail=detail.model_dump(mode="json"), params=p.model_dump(),
    )
