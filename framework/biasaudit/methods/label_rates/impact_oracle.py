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

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from biasaudit.methods.label_rates.impact import SEP, ImpactRatioParams, categorisations
from biasaudit.methods.label_rates.intent import counts
from biasaudit.methods.oracle_kit import (
    REFUSAL_TEXT,
    GroupDesign,
    GroupLevel,
    OracleCase,
    OracleDef,
    generated,
    request_text,
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
    return rate_truths(params, [(u.fields, u.stimulus, bool(selected(kind, params, stimuli, u.stimulus, seed)))
                                for u in units(prep)])


def rate_truths(params: ImpactRatioParams, rows: Sequence[tuple[Mapping[str, Any], str, bool]]) -> dict[str, float]:
    """The true estimates when each unit (its fields, its stimulus, whether the oracle
    selects it) is answered as given: a group's rate is the share of its units selected;
    its ratio, that rate over the highest rate of a group with at least `min_n` stimuli;
    `lowest.<key>`, the smallest ratio of the other such groups; the headline, the
    smallest of those."""
    out: dict[str, float] = {}
    lows: list[float] = []
    for names in categorisations(params.by):
        sel: dict[str, list[int]] = {}
        ids: dict[str, set[str]] = {}
        for fields, stimulus, chosen in rows:
            g = SEP.join(_category(fields, names))
            sel.setdefault(g, []).append(int(chosen))
            ids.setdefault(g, set()).add(stimulus)
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


_WORD = r"(?<!\w){}(?!\w)"


def _names(text: str, word: str) -> bool:
    return re.search(_WORD.format(re.escape(word)), text, flags=re.IGNORECASE) is not None


def groups(prep: Prepared, params: BaseModel) -> GroupDesign | None:
    """The categories of the first `by` field, for the permutation row, where every prompt
    names its stimulus's category as a word (the hiring screen's "A woman Asian
    candidate"): the category's text is then its own content, so the row checks that the
    estimates follow the labels (the gap planted on the prompts naming one category must
    come out on the group that carries that label, and move with it), not the labels.
    None where a prompt does not name its category, or the rate is `scoring`."""
    assert isinstance(params, ImpactRatioParams)
    if params.rate == "scoring":
        return None
    from biasaudit.methods.stance_oracle import units

    fld = params.by[0]
    stimuli = {s.id: s.fields for s in prep.stimuli.stimuli}
    values = sorted({str(f.get(fld, "")) for f in stimuli.values()} - {""})
    if len(values) < 2:
        return None
    for it in prep.plan.items:  # every prompt names its own category, and no other
        text = request_text(prep.plan.requests[it.key])
        said = [v for v in values if _names(text, v)]
        if said != [str(stimuli[it.stimulus].get(fld, ""))]:
            return None
    rows = [(u.fields, u.stimulus) for u in units(prep)]

    def truth(assignment: Mapping[tuple[str, str], str], planted: frozenset[tuple[str, str]]) -> Mapping[str, float]:
        named = {lv for _, lv in planted}
        relabelled = [({**f, fld: assignment[("stimuli", str(f.get(fld, "")))]}, s, str(f.get(fld, "")) not in named)
                      for f, s in rows]
        # the gap on the field's own groups (rates, ratios, lowest), and the rates of the
        # other fields, which it must leave alone (the intersections repeat the first)
        return {k: v for k, v in rate_truths(params, relabelled).items()
                if k.startswith((f"rate.{fld}.", f"ratio.{fld}.")) or k == f"lowest.{fld}"
                or (k.startswith("rate.") and SEP not in k.split(".")[1] and not k.startswith(f"rate.{fld}."))}

    return GroupDesign(var=fld, field=True, source=f"the category word itself (stimulus field {fld!r})",
                       levels=tuple(GroupLevel(factor="stimuli", level=v, group=v, text=v, content=v) for v in values),
                       truth=truth)


def gap(case: OracleCase) -> dict[str, Any] | None:
    """The `gap` oracle: "No" to a request whose prompt names one of the planted
    categories (a whole word), "Yes" to every other; the stimulus's fields are not read."""
    text = request_text(case.request)
    return generated(NO if any(_names(text, w) for w in case.planted) else YES)


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    """Every true value depends on the data: see `plan_truth`."""
    return {}


def meaning(text: str) -> str | None:
    """What an answer of this oracle means, by its text."""
    if text == REFUSAL_TEXT:
        return "refuse"
    return {YES: "select", NO: "reject", UNSURE: "neutral"}.get(text)


ORACLE = OracleDef(respond=respond, truth=truth, plan_truth=plan_truth, meaning=meaning, counts=counts, groups=groups,
                   gap=gap, notes=(
    "planted: the screen rejects every stimulus of the first category of the first `by` field and selects every "
    "other; null: half of every category selected; answers are 'Yes, ...' / 'No, ...', read by the spec's layer",))
