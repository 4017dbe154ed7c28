"""Self-test oracles of StereoSet (`stereoset`): a language model that always prefers a
meaningful sentence to the unrelated one and, between the two meaningful ones, always the
stereotype (`planted`) or the stereotype for exactly half of the items of each target
term and the anti-stereotype for the others (`null`); `ties` scores every token alike
(log-prob 0), so every comparison ties.

Scores: every token of the preferred meaningful sentence gets log-prob -0.001, of the
other one -0.1, of the unrelated sentence -10, so the order holds for the mean
(`normalize: mean`) and for the sum of any sentences of up to about a hundred words.

True values, from the definition (scores.py; Nadeem et al. 2021, section 6): LMS is 100
for both (each meaningful sentence beats the unrelated one in every item). `planted`:
every item prefers the stereotype, so SS_t = 100 for every target, SS = 100 and ICAT =
100 x min(100, 0) / 50 = 0, in every domain and task too. `null`: SS is the mean over
targets of 100 k_t / n_t (or the pooled share, `average: items`) for the balanced
assignment within targets (`stratified_sides`): 50 where every target has an even number
of items, or where the odd ones out fall on alternate sides of targets of one item each
(the shipped sample: two targets with one item); ICAT = 100 x min(SS, 100 - SS) / 50.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from biasaudit.methods.oracle_kit import (
    OracleCase,
    OracleDef,
    found_in,
    scored_tokens,
    stratified_sides,
)
from biasaudit.methods.stereoset.metric import StereoSetParams

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared

PREFERRED, OTHER, UNRELATED = -0.001, -0.1, -10.0
"""Per-token log-probs of the preferred meaningful sentence, the other one, the unrelated one."""


def strata(fields: Mapping[str, Any]) -> tuple[str, ...]:
    """SS is a mean over target terms: the null assignment is balanced within each."""
    return (str(fields["target"]),)


def respond(case: OracleCase) -> dict[str, Any] | None:
    p = case.params
    assert isinstance(p, StereoSetParams)
    role = next((r for r, slot in p.slots.items() if slot == case.item.slot), None)
    if role is None:
        return None
    text = case.request.text or ""
    masked = case.request.kind == "pseudo_loglik"
    if case.kind == "ties":
        return scored_tokens(text, 0.0, special_end=masked)
    if role == "unrelated":
        return scored_tokens(text, UNRELATED, special_end=masked)
    pro = case.kind == "planted" or case.side
    return scored_tokens(text, PREFERRED if (role == "stereotype") == pro else OTHER, special_end=masked)


def content(case: OracleCase) -> dict[str, Any] | None:
    """The sentence found by its text among the record's three, by their gold labels
    (dev.json's `gold_label`: stereotype, anti-stereotype, unrelated): the stereotype
    preferred (`content`) or the anti-stereotype (`content_anti`), the unrelated one last,
    whatever slot carries them."""
    text = case.request.text or ""
    gold = found_in(text, {g: str(case.fields.get(g, "")) for g in ("stereotype", "anti_stereotype", "unrelated")})
    if gold is None:
        return None
    masked = case.request.kind == "pseudo_loglik"
    if gold == "unrelated":
        return scored_tokens(text, UNRELATED, special_end=masked)
    return scored_tokens(text, PREFERRED if (gold == "stereotype") == (case.kind == "content") else OTHER,
                         special_end=masked)


def plan_truth(kind: str, params: BaseModel, prep: Prepared) -> Mapping[str, float]:
    """The null model's SS and ICAT over the spec's items (the planted model's: `truth`)."""
    assert isinstance(params, StereoSetParams)
    if kind != "null":
        return {}
    fields = {s.id: s.fields for s in prep.stimuli.stimuli}
    if not fields:
        return {}
    side = stratified_sides(fields, strata, prep.composed.config.runtime.seed)
    if params.average == "items":
        ss = 100.0 * sum(side.values()) / len(side)
    else:
        per: dict[str, list[bool]] = {}
        for sid, f in fields.items():
            per.setdefault(str(f["target"]), []).append(side[sid])
        ss = sum(100.0 * sum(v) / len(v) for v in per.values()) / len(per)
    icat = 100.0 * min(ss, 100.0 - ss) / 50.0
    return {"": ss, "ss": ss, "icat": icat}


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    if kind == "planted":
        return {"": 100.0, "ss": 100.0, "ss.*": 100.0, "lms": 100.0, "lms.*": 100.0, "icat": 0.0, "icat.*": 0.0}
    if kind == "null":
        return {"lms": 100.0, "lms.*": 100.0}
    return {}  # refusals and ties: nothing is measured


ORACLE = OracleDef(respond=respond, truth=truth, plan_truth=plan_truth, strata=strata, content=content,
                   content_source="the gold labels of each StereoSet item's sentences", notes=(
    "planted: the stereotype over the anti-stereotype in every item, both over the unrelated sentence; null: the "
    "stereotype for half of the items of each target term, the anti-stereotype for the others",))
