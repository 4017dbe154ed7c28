"""`impact_ratio`: each group's selection rate (the share of its coded units that a coding
layer gives the favourable labels) over the rate of the most favoured group, with Katz
log intervals and the four-fifths flag, laid out as NYC Local Law 144 bias audits report
them: per category of each field, and per intersection of the fields (`by: [gender, race]`).

Two rates (`rate`), as the DCWP rules of LL144 define them (6 RCNY 5-300, "Selection
Rate", "Scoring Rate" and "Impact Ratio"; 5-301(b) and (c)): the selection rate, the share
of a category's units the layer gives a favourable label; and, for a layer that gives
scores (a value coder), the scoring rate, the share of a category's units scoring above
the median score of the full sample (every unit with a score, whatever its category). A
score equal to the median is not above it: ties at the median count as not scoring (the
rule says "above the sample's median score"), so with many tied scores the rates can all
sit well under one half. The intervals treat the median as fixed (they are conditional on it).

LL144's small-category rule (6 RCNY 5-301(d), https://codelibrary.amlegal.com/codes/
newyorkcity/latest/NYCrules/0-0-0-138530): "an independent auditor may exclude a category
that represents less than 2% of the data being used for the bias audit from the required
calculations for impact ratio", and the summary must then give that category's number of
applicants and its rate. `exclude_below_share: 0.02` does that (the share of a category's
stimuli in its categorisation), beside `min_n`, the absolute size under which a category
is reported and not judged; an excluded category's rate and count stay in the table.

Any coding layer works: a refusal or endorsement layer (labels: the favourable outcome,
e.g. `answer` rather than `refuse`), a judge's hire / no-hire decision, BiAxis's
endorsement labels. The statistics are `stats.impact` (interval, clustering, zeros,
the reference group); this module turns units into rows and rows into estimates. Its
tables and plots are declared by `report.present_impact` from the families kept in
`ImpactDetail` (records.py).
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from biasaudit.methods.label_rates.metric import (
    Coded,
    coded_share_flags,
    coded_units,
    reliability_items,
)
from biasaudit.methods.label_rates.records import ImpactDetail
from biasaudit.metrics.base import MetricContext
from biasaudit.records.codes import Code, Unit
from biasaudit.records.estimate import Estimate, GroupRef, Subset
from biasaudit.records.metric_result import MetricResult, ValidityFlag
from biasaudit.stats.impact import FOUR_FIFTHS, KATZ, MIN_N, ImpactFamily, impact_ratios
from biasaudit.stats.proportions import _wilson_bounds

SEP = "+"
"""Joins the fields of an intersection (`gender+race`) and their values (`female+Black`)."""


class ImpactRatioParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    layer: str
    """The coding layer whose labels decide selection (or, with `rate: scoring`, whose
    scores are compared with their median)."""
    labels: list[str] = Field(default_factory=list)
    """The favourable labels: a unit is selected when the layer gives one of them (e.g.
    [answer] for not refused, [hire] for a hiring decision). Required with `rate:
    selection`; not given with `rate: scoring`."""
    rate: Literal["selection", "scoring"] = "selection"
    """`selection`: the share of a category's units given a favourable label. `scoring`
    (LL144's scoring rate, for a layer of scores): the share of a category's units scoring
    above the median score of all scored units (a score equal to the median is not above
    it); the impact ratio is a category's scoring rate over the highest one."""
    exclude_below_share: float = Field(default=0.0, ge=0.0, lt=0.5)
    """LL144's small-category rule (6 RCNY 5-301(d)): a category with less than this share
    of the stimuli of its categorisation (0.02: 2%) is excluded from the impact ratios
    (never the reference nor the lowest); its count and rate are still reported, with a
    note. 0 (the default): no category is excluded."""
    by: list[str] = Field(min_length=1, max_length=3)
    """The categories: stimulus fields. One name: its categories. Two or three:
    each one's categories and every intersection of them (`ratio.gender+race.female+Black`),
    as LL144 audits report sex, race/ethnicity and their intersection."""
    min_n: int = Field(default=MIN_N, ge=1)
    """Groups with fewer stimuli than this are reported with a note, never flagged, never
    the reference, and not judged on their own (their estimates block a threshold)."""
    bound: float = Field(default=FOUR_FIFTHS, gt=0.0, le=1.0)
    """The flag: a ratio below it is flagged (0.8: the four-fifths rule)."""

    @model_validator(mode="after")
    def _labels_match_rate(self) -> ImpactRatioParams:
        if self.rate == "selection" and not self.labels:
            raise ValueError("`labels` is required with rate: selection (the favourable labels, e.g. [invite]); "
                             "for a layer of scores, say rate: scoring")
        if self.rate == "scoring" and self.labels:
            raise ValueError("`labels` is for rate: selection; with rate: scoring a unit counts when its score is "
                             "above the sample median, so remove `labels`")
        return self


def _value(u: Unit, name: str) -> str | None:
    """The unit's category under a stimulus field; None: none (empty or missing)."""
    v = u.fields.get(name)
    return None if v is None or v == "" else str(v)


def outcome(c: Code, wanted: set[str], median: float | None) -> float:
    """1 when the unit counts (selected: a favourable label; scoring: a score above the
    median, a tie at the median is not above it), else 0."""
    if median is None:
        return 1.0 if c.label in wanted else 0.0
    return 1.0 if c.value is not None and c.value > median else 0.0


def scored_median(coded: list[Coded]) -> float | None:
    """The median score of the full sample (every coded unit with a score, whatever its
    category: 6 RCNY 5-301(c)(1)); None when no unit has one."""
    vals = [float(c.value) for _, c in coded if c.value is not None]
    return float(statistics.median(vals)) if vals else None


def categorise(coded: list[Coded], names: tuple[str, ...], wanted: set[str], median: float | None = None,
               ) -> tuple[dict[str, list[float]], dict[str, list[str]], int]:
    """(group -> 0/1 rows, group -> stimuli, units without a category) for one
    categorisation (a field, or an intersection); with `median`, a row is 1 when the
    unit's score is above it (the scoring rate)."""
    values: dict[str, list[float]] = {}
    clusters: dict[str, list[str]] = {}
    unknown = 0
    for u, c in coded:
        parts = [_value(u, n) for n in names]
        if any(p is None for p in parts):
            unknown += 1
            continue
        g = SEP.join(p for p in parts if p is not None)
        values.setdefault(g, []).append(outcome(c, wanted, median))
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


def family_estimates(fam: ImpactFamily, combos: dict[str, dict[str, str]] | None = None,
                     what: str = "selected") -> dict[str, Estimate]:
    """`rate.<key>.<group>`, `ratio.<key>.<group>` and `lowest.<key>`."""
    out: dict[str, Estimate] = {}
    for r in fam.rows:
        rate = r.rate
        out[f"rate.{fam.key}.{r.group}"] = _rate_estimate(r.selected, rate.value, rate.n, rate.clusters, rate.n_eff,
                                                          what).over(
            Subset(any_of=[combos[r.group]]) if combos and r.group in combos else None).of(
                GroupRef(factor=fam.key, levels=[r.group]))
    for r in fam.rows:
        out[f"ratio.{fam.key}.{r.group}"] = r.ratio.of(GroupRef(factor=fam.key, levels=[r.group],
                                                                reference=fam.reference))
    out[f"lowest.{fam.key}"] = fam.lowest()
    return out


def _rate_estimate(selected: int, p: float, n: int, clusters: int, n_eff: float, what: str = "selected") -> Estimate:
    lo, hi = _wilson_bounds(p, n_eff, 0.95)
    tost = _wilson_bounds(p, n_eff, 0.90)  # the same Wilson at 90%, for equivalence thresholds
    clustered = clusters < n
    return Estimate(value=p, ci_low=lo, ci_high=hi, n=clusters, rows=n if clustered else None,
                    clusters=clusters if clustered else None,
                    method="wilson-design-effect" if clustered else "wilson",
                    note=f"{selected} of {n} {what}" + (f"; effective n {n_eff:.1f}" if clustered else ""),
                    tost_interval=tost)


def lowest_of(fams: list[ImpactFamily], by: list[str]) -> Estimate:
    """The smallest judged ratio of any categorisation (the headline), undefined with the
    reasons when no categorisation has one."""
    # the headline is also picked among the categorisations: alpha split over those judged
    split = max(1, sum(f.groups_compared() > 0 for f in fams))
    lows = [(f, f.lowest(split=split)) for f in fams]
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
    scoring = p.rate == "scoring"
    median = scored_median(coded) if scoring else None
    if scoring:
        # units the layer coded without a score (a label layer) cannot be above the median
        coded = [(u, c) for u, c in coded if c.value is not None]
    fams: list[ImpactFamily] = []
    combos: dict[tuple[str, ...], dict[str, dict[str, str]]] = {}
    unknown: dict[str, int] = {}
    for names in categorisations(p.by):
        values, clusters, unk = categorise(coded, names, wanted, median)
        combos[names] = combinations(coded, names)
        fam = with_subsets(impact_ratios(values, clusters, by=names, min_n=p.min_n, bound=p.bound,
                                         exclude_below_share=p.exclude_below_share), combos[names])
        fams.append(fam)
        unknown[fam.key] = unk
    est: dict[str, Estimate] = {}
    what = f"above the median {median:g}" if median is not None else "selected"
    for fam in fams:
        est.update(family_estimates(fam, combos[fam.by], what))
    primary = fams[-1]
    est = {"lowest": lowest_of(fams, p.by), **est}
    if scoring and median is None:
        est = {k: Estimate.no_data(e.method, f"undefined: the {p.layer} layer gave no unit a score (rate: scoring "
                                             "needs a layer of numbers)") for k, e in est.items()}
    flags = [*coded_share_flags(ctx, status, len(coded)), *_small_flags(fams)]
    four_fifths = [f"{fam.key}={r.group}" for fam in fams for r in fam.rows if r.flag.startswith("below")]
    notes = [f"Four-fifths flag (ratio below {p.bound:g}, groups of at least {p.min_n} stimuli): "
             + (", ".join(four_fifths) if four_fifths else "none")]
    notes += [f"{n} coded units without a {k.replace(SEP, ' and ')} value are not in the {k} ratios."
              for k, n in unknown.items() if n]
    if scoring:
        notes.append(f"Scoring rate (6 RCNY 5-300): the share of a category's units scoring above the median score "
                     f"of all {len(coded)} scored units, {median if median is not None else 'none'}; a score equal "
                     "to the median is not above it.")
    if p.exclude_below_share:
        notes += [f"{fam.key}: excluded from the ratios, under {p.exclude_below_share:g} of the data (6 RCNY "
                  f"5-301(d)): " + ", ".join(f"{r.group} ({r.rate.clusters} stimuli, {r.rate.n} units, rate "
                                             f"{r.rate.value:.4g})" for r in fam.rows if r.excluded)
                  for fam in fams if any(r.excluded for r in fam.rows)]
    compared = [f for f in fams if f.groups_compared() > 2]
    if compared:
        notes.append("The lowest ratios' intervals are simultaneous over the groups they are the worst pair of (the "
                     "reference and the lowest group are both picked from the data; critical value of the least "
                     "favourable configuration): " + ", ".join(f"lowest.{f.key}: {f.groups_compared()} groups"
                                                                for f in compared)
                     + (f"; the headline `lowest` splits alpha over {len(fams)} categorisations" if len(fams) > 1
                        else "") + ". The per-category ratios keep their per-pair intervals.")
    return MetricResult(
        validity=flags, id=metric_id, name="impact_ratio",
        title=(f"Impact ratios of {', '.join(p.labels)} ({p.layer} layer) by {' x '.join(p.by)}" if not scoring
               else f"Impact ratios of the scoring rate ({p.layer} layer, above the median) by {' x '.join(p.by)}"),
        headline="lowest",
        estimates=est, reliability=reliability_items(p.layer, status), reference=1.0,
        reference_note=f"1 is parity with the most favoured group; below {p.bound:g} the four-fifths rule flags "
                       "adverse impact. " + (f"A group's selection rate is the share of its coded units the "
                                             f"{p.layer} layer labels {', '.join(p.labels)}" if not scoring else
                                             "A group's scoring rate is the share of its scored units above the "
                                             "median score of all scored units")
                       + f"; `lowest` is the smallest ratio of a group with at least {p.min_n} stimuli (picked "
                         "after looking; its interval simultaneous over the groups compared).",
        items=[ctx.item(u.stimulus, u.cell, u.fields, outcome=int(outcome(c, wanted, median))) for u, c in coded],
        counts={"units": sum(status.values()), "coded": len(coded),
                **{k: status.get(k, 0) for k in ("abstain", "not_applicable", "failed")},
                "uncategorised": unknown[primary.key]},
        notes=notes, detail=ImpactDetail(families=fams, uncategorised=unknown).model_dump(mode="json"),
        params=p.model_dump())


def layers(p: BaseModel) -> dict[str, str]:
    assert isinstance(p, ImpactRatioParams)
    return {"layer": p.layer}


