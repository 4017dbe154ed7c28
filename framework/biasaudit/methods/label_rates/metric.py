"""`label_rate`: how often a coding layer gives some labels (refusals, endorsements...),
pooled, per prompt condition and per group, with the spread across conditions.

The rate is over the units the layer coded; abstentions, units the layer does not apply
to and failures are counted apart (and shown as reliability items), not in the base.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.metrics.base import MetricContext
from biasaudit.metrics.validity import valid_share
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult, PlotSpec, ReliabilityItem, Table
from biasaudit.stats import cell_spread, wilson
from biasaudit.stats.disaggregate import (
    Obs,
    by_cell,
    by_group,
    contrast_estimates,
    contrast_table,
    group_contrasts,
    group_table,
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


def compute(ctx: MetricContext, metric_id: str, params: BaseModel) -> MetricResult:
    assert isinstance(params, LabelRateParams)
    p = params
    codes = ctx.layer_codes(p.layer)
    layer = ctx.layers[p.layer]
    wanted = set(p.labels)
    status = Counter(c.status for c in codes.values())
    coded = [(u, codes[u.id]) for u in ctx.units if u.id in codes and codes[u.id].coded]
    rows = [Obs(cell=u.cell, cluster=u.stimulus, value=1.0 if c.label in wanted else 0.0, fields=u.fields)
            for u, c in coded]
    cell_ids = [c.id for c in ctx.plan.cells]
    est: dict[str, Estimate] = {"rate": pooled(rows, proportion, seed=p.seed)}
    labels = list(layer.labels or sorted({c.label for _, c in coded if c.label is not None}))
    for lab in labels:
        est[f"share.{lab}"] = pooled([Obs(cell=u.cell, cluster=u.stimulus, value=1.0 if c.label == lab else 0.0)
                                      for u, c in coded], proportion, seed=p.seed)
    group_tables: list[Table] = []
    match = p.match
    for fld in p.by:
        per = by_group(rows, fld, proportion, seed=p.seed)
        for g, e in per.items():
            est[f"rate.{fld}.{g}"] = e
        fam = group_contrasts(rows, fld, paired_units="item" if match else "",
                              match=(lambda o: None if o.fields.get(match) is None else str(o.fields[match]))
                              if match else None)
        est.update(contrast_estimates(fam, fld))
        group_tables.append(group_table(per, fld, "rate"))
        ct = contrast_table(fam, fld, "rate")
        if ct is not None:
            group_tables.append(ct)
    cells = {"rate": by_cell(rows, proportion, cells=cell_ids)}
    spread = cell_spread([o.cell for o in rows], [o.cluster for o in rows], [o.value for o in rows], seed=p.seed)
    per_cell = {cid: Counter(c.label for u, c in coded if u.cell == cid) for cid in cell_ids}
    table = Table(
        title=f"Labels of layer {p.layer} per prompt condition",
        columns=["cell", "coded", *labels, "rate", "CI low", "CI high"],
        rows=[[cid, sum(per_cell[cid].values()), *[per_cell[cid].get(lab, 0) for lab in labels],
               cells["rate"][cid].value, cells["rate"][cid].ci_low, cells["rate"][cid].ci_high]
              for cid in cell_ids if cid in cells["rate"]],
        note=f"rate: share of coded units labelled {', '.join(p.labels)}; Wilson 95% intervals per cell.")
    plots = [PlotSpec(kind="interval_bars", title=f"Rate of {', '.join(p.labels)} by prompt condition",
                      xlabel="cell", ylabel="rate", labels=list(cells["rate"]), estimates=list(cells["rate"].values()),
                      alt=f"Share of units the {p.layer} layer labels {', '.join(p.labels)}, per prompt condition, "
                          "with 95% intervals.")]
    n_units = sum(status.values())
    reliability = [
        ReliabilityItem(name=f"{p.layer}: abstentions", estimate=wilson(status.get("abstain", 0), n_units),
                        note="units the layer could not code; left out of the rate"),
        ReliabilityItem(name=f"{p.layer}: failed", estimate=wilson(status.get("failed", 0), n_units),
                        note="units whose response or coding request failed; left out of the rate"),
    ]
    applicable = n_units - status.get("not_applicable", 0)
    flag = valid_share(len(coded), applicable, "units", ctx.config.validity.min_valid_share,
                       invalid={k: status.get(k, 0) for k in ("abstain", "failed")})
    return MetricResult(
        validity=[flag] if flag else [],
        id=metric_id, name="label_rate", title=f"Rate of {', '.join(p.labels)} ({p.layer} layer)", headline="rate",
        estimates=est, cells=cells, spread={"rate": spread} if spread else {}, reliability=reliability,
        reference_note=f"Share of the units coded by the {p.layer} layer that it labels {', '.join(p.labels)}. "
                       "Pooled over prompt conditions with a Wilson interval on the design's effective n "
                       "(clustered by stimulus) when a stimulus gives several units.",
        items=[ctx.item(u.stimulus, u.cell, u.fields, outcome=int(c.label in wanted)) for u, c in coded],
        tables=[table, *group_tables], plots=plots,
        counts={"units": n_units, "coded": len(coded), "abstain": status.get("abstain", 0),
                "not_applicable": status.get("not_applicable", 0), "failed": status.get("failed", 0)},
        params=p.model_dump(),
    )
