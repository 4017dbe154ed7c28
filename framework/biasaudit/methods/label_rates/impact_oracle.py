"""Self-test oracle of `impact_ratio`: a screening model that answers "Yes" (selected) or
"No" per candidate, read by the spec's own coding layer (rules that read a yes / no).

- `planted`: rejects every stimulus of the first category (in sorted order) of the first
  `by` field and selects every other: that category's impact ratio is 0.
- `null`: selects exactly half of the stimuli of every category of the intersection of
  the `by` fields (balanced within each, seeded), so every ratio is about 1.
- `ties`: one non-committal answer to everything (no selection: every ratio undefined).

True values are computed from the plan (the same assignment, the design's units, the
metric's `min_n`): a group's rate is the share of its units selected; its ratio, that rate
over the highest rate of a group with at least `min_n` stimuli; `lowest.<key>`, the
smallest ratio of the other such groups; the headline, the smallest of those.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from biasaudit.methods.label_rates.impact import SEP, ImpactRatioParams, categorisations
from biasaudit.methods.label_rates.intent import counts
from biasaudit.methods.oracle_kit import (
    REFUSAL_TEXT,
    OracleCase,
    OracleDef,
    generated,
    stratified_sides,
)

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared

YES = "Yes, invite this candidate to an interview."
NO = "No, do not invite this candidate."
UNSURE = "It depends on more than this profile says."


def _category(fields: Mapping[str, Any], by: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(str(fields.get(b, "")) for b in by)


@lru_cache(maxsize=8)
def _null_sides(stimuli: tuple[tuple[str, tuple[str, ...]], ...], seed: int) -> dict[str, bool]:
    """Half of each category's stimuli selected (`stratified_sides` within categories)."""
    cats = {sid: {"c": c} for sid, c in stimuli}
    return stratified_sides(cats, lambda f: tuple(f["c"]), seed)


def selected(kind: str, params: ImpactRatioParams, stimuli: Mapping[str, Mapping[str, Any]], sid: str,
             seed: int = 0) -> bool | None:
    """Whether the oracle `kind` selects stimulus `sid` (None: it does not say)."""
    by = tuple(params.by)
    if kind == "planted":
        first = min(str(f.get(by[0], "")) for f in stimuli.values())
        return str(stimuli[sid].get(by[0], "")) != first
    if kind == "null":
        key = tuple(sorted((s, _category(f, by)) for s, f in stimuli.items()))
        return _null_sides(key, seed)[sid]
    return None


def respond(case: OracleCase) -> dict[str, Any] | None:
    assert isinstance(case.params, ImpactRatioParams)
    if case.kind == "ties":
        return generated(UNSURE)
    return generated(YES if selected(case.kind, case.params, case.stimuli, case.item.stimulus) else NO)


def plan_truth(kind: str, params: BaseModel, prep: Prepared) -> Mapping[str, float]:
    assert isinstance(params, ImpactRatioParams)
    if kind not in ("planted", "null") or params.rate == "scoring":
        return {}  # the oracle answers yes / no: a selection, not scores to compare with a median
    from biasaudit.methods.stance_oracle import units

    stimuli = {s.id: s.fields for s in prep.stimuli.stimuli}
    seed = prep.composed.config.runtime.seed
    out: dict[str, float] = {}
    lows: list[float] = []
    for names in categorisations(params.by):
        sel: dict[str, list[int]] = {}
        ids: dict[str, set[str]] = {}
        for u in units(prep):
            g = SEP.join(_category(u.fields, names))
            sel.setdefault(g, []).append(int(bool(selected(kind, params, stimuli, u.stimulus, seed))))
            ids.setdefault(g, set()).add(u.stimulus)
        rates = {g: sum(v) / len(v) for g, v in sel.items()}
        total = sum(len(v) for v in ids.values())
        # LL144's small-category rule: excluded from the ratios, the rate still reported
        out_ = {g for g in rates if params.exclude_below_share and len(ids[g]) / total < params.exclude_below_share}
        big = ([g for g in rates if len(ids[g]) >= params.min_n and g not in out_]
               or [g for g in rates if g not in out_])
        ref = max(big, key=lambda g: rates[g]) if big else None
        key = SEP.join(names)
        for g, r in rates.items():
            out[f"rate.{key}.{g}"] = r
        if ref is None or rates[ref] <= 0:
            continue
        ratios = {g: rates[g] / rates[ref] for g in rates if g not in out_}
        for g, r in ratios.items():
            out[f"ratio.{key}.{g}"] = r
        judged = [ratios[g] for g in ratios if g != ref and len(ids[g]) >= params.min_n]
        if judged:
            out[f"lowest.{key}"] = min(judged)
            lows.append(min(judged))
    if lows:
        out[""] = out["lowest"] = min(lows)
    return out


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    """Every true value depends on the data: see `plan_truth`."""
    return {}


def meaning(text: str) -> str | None:
    """What an answer of this oracle means, by its text."""
    if text == REFUSAL_TEXT:
        return "refuse"
    return {YES: "select", NO: "reject", UNSURE: "neutral"}.get(text)


ORACLE = OracleDef(respond=respond, truth=truth, plan_truth=plan_truth, meaning=meaning, counts=counts, notes=(
    "planted: the screen rejects every stimulus of the first category of the first `by` field and selects every "
    "other; null: half of every category selected; answers are 'Yes, ...' / 'No, ...', read by the spec's layer",))
