"""`impact_ratio`: each group's selection rate (the share of its coded units that a coding
layer gives the favourable labels) over the rate of the most favoured group, with Katz
log intervals and the four-fifths flag, laid out as NYC Local Law 144 bias audits report
them: per category of each field, and per intersection of the fields (`by: [gender, race]`).

Any coding layer works: a refusal or endorsement layer (labels: the favourable outcome,
e.g. `answer` rather than `refuse`), a judge's hire / no-hire decision, BiAxis's
endorsement labels. The statistics are `stats.impact` (interval, clustering, zeros,
the reference group); this module turns units into rows and rows into estimates. Its
tables and plots are declared by `report.present_impact` from the families kept in
`ImpactDetail` (records.py).
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.methods.label_rates.metric import (
    Coded,
    coded_share_flags,
    coded_units,
    reliability_items,
)
from biasaudit.methods.label_rates.records import ImpactDetail
from biasaudit.metrics.base import MetricContext
from biasaudit.records.codes import Unit
from biasaudit.records.estimate import Estimate, Subset
from biasaudit.records.metric_result import MetricResult, ValidityFlag
from biasaudit.stats.impact import FOUR_FIFTHS, KATZ, MIN_N, ImpactFamily, impact_ratios
from biasaudit.stats.proportions import _wilson_bounds

SEP = "+"
"""Joins the fields of an intersection (`gender+race`) and their values (`female+Black`)."""


class ImpactRatioParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    layer: str
    """The coding layer whose labels decide selection."""
    labels: list[str] = Field(min_length=1)
    """The favourable labels: a unit is selected when the layer gives one of them (e.g.
    [answer] for not refused, [hire] for a hiring decision)."""
    by: list[str] = Field(min_length=1, max_length=3)
    """The categories: stimulus fields. One name: its categories. Two or three:
    each one's categories and every intersection of them (`ratio.gender+race.female+Black`),
    as LL144 audits report sex, race/ethnicity and their intersection."""
    min_n: int = Field(default=MIN_N, ge=1)
    """Groups with fewer stimuli than this are reported with a note, never flagged, never
    the reference, and not judged on their own (their estimates block a threshold)."""
    bound: float = Field(default=FOUR_FIFTHS, gt=0.0, le=1.0)
    """The flag: a ratio below it is flagged (0.8: the four-fifths rule)."""


def _value(u: Unit, name: str) -> str | None:
    """The unit's category under a stimulus field; None: none (empty or missing)."""
    v = u.fields.get(name)
    return None if v is None or v == "" else str(v)


def categorise(coded: list[Coded], names: tuple[str, ...], wanted: set[str],
               ) -> tuple[dict[str, list[float]], dict[str, list[str]], int]:
    """(group -> 0/1 rows, group -> stimuli, units without a category) for one
    categorisation (a field, or an intersection)."""
    values: dict[str, list[float]] = {}
    clusters: dict[str, list[str]] = {}
    unknown = 0
    for u, c in coded:
        parts = [_value(u, n) for n in names]
        if any(p is None for p in parts):
            unknown += 1
            continue
        g = SEP.join(p for p in parts if p is not None)
        values.setdefault(g, []).append(1.0 if c.label in wanted else 0.0)
        clusters.setdefault(g, []).append(u.stimulus)
    order = sorted(values)
    return {g: values[g] for g in order}, {g: clusters[g] for g in order}, unknown


def categorisations(by: list[str]) -> list[tuple[str, ...]]:
    """Each field alone, then the intersection of all (two or three fields)."""
    single = [(f,) for f in by]
    return single + ([tuple(by)] if len(by) > 1 else [])


def combinations(coded: list[Coded], names: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """Group (as `categorise` names it) -> its value of each field: what its estimates'
    `Subset` names (a joined name is not split back: a value may hold the separator)."""
    out: dict[str, dict[str, str]] = {}
    for u, _ in coded:
        parts = [_value(u, n) for n in names]
        if all(p is not None for p in parts):
            values = [p for p in parts if p is not None]
            out.setdefault(SEP.join(values), dict(zip(names, values, strict=True)))
    return out


def with_subsets(fam: ImpactFamily, combos: dict[str, dict[str, str]]) -> ImpactFamily:
    """The family with each ratio recorded as computed from its group's units and the
    reference group's (so `lowest` names the two groups it compares too)."""
    ref = [combos[fam.reference]] if fam.reference in combos else []
    rows = [replace(r, ratio=r.ratio.over(Subset(any_of=[combos[r.group], *[c for c in ref if c != combos[r.group]]])))
            if r.group in combos else r for r in fam.rows]
    return replace(fam, rows=rows)


def family_estimates(fam: ImpactFamily, combos: dict[str, dict[str, str]] | None = None) -> dict[str, Estimate]:
    """`rate.<key>.<group>`, `ratio.<key>.<group>` and `lowest.<key>`."""
    out: dict[str, Estimate] = {}
    for r in fam.rows:
        rate = r.rate
        out[f"rate.{fam.key}.{r.group}"] = _rate_estimate(r.selected, rate.value, rate.n, rate.clusters, rate.n_eff).over(
            Subset(any_of=[combos[r.group]]) if combos and r.group in combos else None)
    for r in fam.rows:
        out[f"ratio.{fam.key}.{r.group}"] = r.ratio
    out[f"lowest.{fam.key}"] = fam.lowest()
    return out


def _rate_estimate(selected: int, p: float, n: int, clusters: int, n_eff: float) -> Estimate:
    lo, hi = _wilson_bounds(p, n_eff, 0.95)
    clustered = clusters < n
    return Estimate(value=p, ci_low=lo, ci_high=hi, n=clusters, rows=n if clustered else None,
                    clusters=clusters if clustered else None,
                    method="wilson-design-effect" if clustered else "wilson",
                    note=f"{selected} of {n} selected" + (f"; effective n {n_eff:.1f}" if clustered else ""))


def lowest_of(fams: list[ImpactFamily], by: list[str]) -> Estimate:
    """The smallest judged ratio of any categorisation (the headline), undefined with the
    reasons when no categorisation has one."""
    lows = [(f, f.lowest()) for f in fams]
    judged = [(f, e) for f, e in lows if e.has_data]
    if not judged:
        if not any(f.rows for f in fams):
            return Estimate.no_data(KATZ, f"undefined: no coded unit has a value of {' and '.join(by)}")
        return Estimate.no_data(KATZ, "undefined: " + "; ".join(f"{f.key}: {e.note.removeprefix('undefined: ')}"
                                                                for f, e in lows))
    f, e = min(judged, key=lambda fe: float(fe[1].value or 0.0))
    return e.model_copy(update={"note": f"by {f.key}: {e.note}"})


def _small_flags(fams: list[ImpactFamily]) -> list[ValidityFlag]:
    """A small cell is never judged on its own: its rate and ratio block a threshold."""
    names = [f"{kind}.{fam.key}.{r.group}" for fam in fams for r in fam.rows if r.small for kind in ("rate", "ratio")]
    if not names:
        return []
    groups = sorted({n.split(".", 1)[1] for n in names})
    return [ValidityFlag(kind="small_cell", message=f"{len(groups)} group(s) with fewer than {fams[0].min_n} stimuli "
                         f"(impact_ratio.min_n): reported, not judged: {', '.join(groups[:8])}"
                         + (" ..." if len(groups) > 8 else ""), estimates=names)]


def compute(ctx: MetricContext, metric_id: str, params: BaseModel) -> MetricResult:
    assert isinstance(params, ImpactRatioParams)
    p = params
    wanted = set(p.labels)
    status, coded = coded_units(ctx, p.layer)
    fams: list[ImpactFamily] = []
    combos: dict[tuple[str, ...], dict[str, dict[str, str]]] = {}
    unknown: dict[str, int] = {}
    for names in categorisations(p.by):
        values, clusters, unk = categorise(coded, names, wanted)
        combos[names] = combinations(coded, names)
        fam = with_subsets(impact_ratios(values, clusters, by=names, min_n=p.min_n, bound=p.bound), combos[names])
        fams.append(fam)
        unknown[fam.key] = unk
    est: dict[str, Estimate] = {}
    for fam in fams:
        est.update(family_estimates(fam, combos[fam.by]))
    primary = fams[-1]
    est = {"lowest": lowest_of(fams, p.by), **est}
    flags = [*coded_share_flags(ctx, status, len(coded)), *_small_flags(fams)]
    four_fifths = [f"{fam.key}={r.group}" for fam in fams for r in fam.rows if r.flag.startswith("below")]
    notes = [f"Four-fifths flag (ratio below {p.bound:g}, groups of at least {p.min_n} stimuli): "
             + (", ".join(four_fifths) if four_fifths else "none")]
    notes += [f"{n} coded units without a {k.replace(SEP, ' and ')} value are not in the {k} ratios."
              for k, n in unknown.items() if n]
    return MetricResult(
        validity=flags, id=metric_id, name="impact_ratio",
        title=f"Impact ratios of {', '.join(p.labels)} ({p.layer} layer) by {' x '.join(p.by)}", headline="lowest",
        estimates=est, reliability=reliability_items(p.layer, status), reference=1.0,
        reference_note=f"1 is parity with the most favoured group; below {p.bound:g} the four-fifths rule flags "
                       "adverse impact. A group's selection rate is the share of its coded units the "
                       f"{p.layer} layer labels {', '.join(p.labels)}; `lowest` is the smallest ratio of a group "
                       f"with at least {p.min_n} stimuli (picked after looking).",
        items=[ctx.item(u.stimulus, u.cell, u.fields, outcome=int(c.label in wanted)) for u, c in coded],
        counts={"units": sum(status.values()), "coded": len(coded),
                **{k: status.get(k, 0) for k in ("abstain", "not_applicable", "failed")},
                "uncategorised": unknown[primary.key]},
        notes=notes, detail=ImpactDetail(families=fams, uncategorised=unknown).model_dump(mode="json"),
        params=p.model_dump())


def layers(p: BaseModel) -> dict[str, str]:
    assert isinstance(p, ImpactRatioParams)
    return {"layer": p.layer}


