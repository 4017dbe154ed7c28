"""Self-test oracles of FiSCo (`biasaudit selftest`).

Every answer is a few sentences (claims), each a sentence of its own that no other kind
of claim repeats:

- one claim shared by every answer to the question (`COMMON`);
- two content claims: under `planted` they depend on the person's group (the same for
  every person of a group, different between groups: the model answers the groups
  differently and each group consistently); under `null` they are the same for
  everyone (the answer does not depend on the group);
- 0 to 3 personal claims of this person's answer alone (how many: a hash of the
  person's value and the sample), so the similarities vary between pairs as sampled
  answers do.

The judges are perfect: a claim is entailed (E) by an answer that states it and neutral
(N) otherwise; the embedder gives each sentence a direction of its own (an answer's
vector is the normalised sum of its sentences'), so two answers' cosine is their shared
sentences over sqrt(n1 n2). `ties` gives one constant answer to every prompt: every
similarity is 1, the Welch test has zero variance and is undefined.

True values (docs/methods/fisco.md). With strict weights, two answers sharing s
claims, with n1 and n2 claims, have S = 2 s / (n1 + n2): under `planted`, s = 3 within a
group and 1 across groups, with n = 3 + personal claims on both sides, so every inter-
group similarity (at most 2/6) lies below every intra-group one (at least 6/12): every
question truly has answers that differ across groups, flagged share 1 (overall and in
every `by` group). Under `null`, intra- and inter-group pairs are alike (s = 3 for every
pair): flagged share 0.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from biasaudit.coding.base import CodingRequest
from biasaudit.methods.fisco.metric import FiscoParams
from biasaudit.methods.fisco.names import GENDER_WORDS, NAME_GENDER
from biasaudit.methods.oracle_kit import (
    REFUSAL_TEXT,
    GroupDesign,
    GroupLevel,
    OracleCase,
    OracleDef,
    generated,
    keyed_embedding,
    request_text,
)

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared

COMMON = "This situation rewards careful preparation and clear goals."
_SENT = re.compile(r"(?<=[.!?])\s+|\n+")
_ORACLE_CLAIM = re.compile(r"This situation rewards careful preparation and clear goals\.|Content point \d+ of "
                           r"profile \w+ applies here\.|Personal detail \d+ of answer \w+ matters here\.|"
                           + re.escape(REFUSAL_TEXT))


def tag(text: str) -> str:
    return format(zlib.crc32(text.encode("utf-8")), "08x")


def content(profile: str) -> list[str]:
    """The two content claims of a profile (a group's, or everyone's under `null`)."""
    return [f"Content point {j} of profile {tag(profile)} applies here." for j in (1, 2)]


def personal(value: str, sample: int) -> list[str]:
    """0 to 3 claims of this person's answer alone."""
    key = f"{value}|{sample}"
    return [f"Personal detail {j} of answer {tag(key)} matters here." for j in range(1, 1 + zlib.crc32(key.encode()) % 4)]


def answer(kind: str, group: str, value: str, sample: int) -> str:
    if kind == "ties":
        return COMMON
    profile = f"group {group}" if kind == "planted" else "everyone"
    return " ".join([COMMON, *content(profile), *personal(value, sample)])


def respond(case: OracleCase) -> dict[str, Any] | None:
    p = case.params
    assert isinstance(p, FiscoParams)
    value = str(case.vars.get("value", case.item.cell))
    return generated(answer(case.kind, str(case.vars.get(p.group_var, "?")), value, case.item.sample))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s.strip()]


def _nli(label: str) -> dict[str, Any]:
    return {"probs": {"entailment": float(label == "E"), "neutral": float(label == "N"),
                      "contradiction": float(label == "C")}}


def code(kind: str, request: CodingRequest, intents: Mapping[str, str]) -> dict[str, Any] | None:
    """A perfect judge: a claim is entailed by an answer that states it, neutral
    otherwise; a claim list is the oracle's sentences (or the refusal) found in the
    extraction prompt; an embedding keys each sentence."""
    if request.kind == "classify_nli":
        claim = (request.text_pair or "").strip()
        return _nli("E" if claim in sentences(request.text or "") else "N")
    if request.kind == "embed":
        return keyed_embedding(sentences(request.text or ""))
    if request.kind == "generate":  # `extract: llm`: the claims of the answer quoted in the prompt
        found = [m.group(0) for m in _ORACLE_CLAIM.finditer(request.user or "")]
        return generated("\n".join(dict.fromkeys(found)))
    return None


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    if kind == "planted":
        return {"": 1.0, "flagged_share": 1.0, "flagged_share.*": 1.0}
    if kind == "null":
        return {"": 0.0, "flagged_share": 0.0, "flagged_share.*": 0.0}
    return {}  # refusals and one constant answer: every similarity alike, nothing measured



def name_groups(prep: Prepared, params: BaseModel) -> tuple[list[str], list[str]]:
    """Each level's gender group against the gender the BBQ authors' name list gives the
    name the level sets (names.py): a name put in the other group is a problem; levels
    whose name the list lacks are noted as unchecked. Group labels that name no gender
    (ages, races) are not checked."""
    assert isinstance(params, FiscoParams)
    problems: list[str] = []
    unchecked: list[str] = []
    for factor, levels in prep.composed.config.factors.items():
        for level, spec in levels.items():
            given = spec.vars.get(params.group_var)
            said = GENDER_WORDS.get(str(given).strip().lower()) if given is not None else None
            if said is None:
                continue
            words = [str(v) for k, v in spec.vars.items() if k != params.group_var and isinstance(v, str)] + [level]
            name = next((w for w in words if w.strip().lower() in NAME_GENDER), None)
            if name is None:
                unchecked.append(level)
                continue
            listed = NAME_GENDER[name.strip().lower()]
            if listed != said:
                problems.append(f"factors.{factor}.{level}: the level puts {name!r} in group {given!r} "
                                f"({params.group_var}), but the BBQ authors' name list gives {name!r} as {listed}: "
                                "a name in the wrong group (move the level to the other group)")
    notes = [f"names not in the BBQ name list, their group unchecked: {', '.join(unchecked)} (validate prints the "
             "level -> group table to check them by eye)"] if unchecked else []
    return problems, notes

def _text(vars_: Mapping[str, Any], level: str, group_var: str) -> str:
    """The words that name a level in a prompt: its `value` (what the shipped specs put in
    the question), else its first other text variable, else the level's key."""
    texts = [str(v) for k, v in vars_.items() if k != group_var and isinstance(v, str) and v.strip()]
    return str(vars_["value"]) if isinstance(vars_.get("value"), str) else texts[0] if texts else level


def _content_label(text: str, labels: set[str]) -> str | None:
    """The spec's group label for the gender the BBQ name list gives `text` (None: the list
    lacks the name, or no label, or more than one, names that gender)."""
    gender = NAME_GENDER.get(text.strip().lower())
    said = [g for g in labels if GENDER_WORDS.get(g.strip().lower()) == gender]
    return said[0] if gender is not None and len(said) == 1 else None


def groups(prep: Prepared, params: BaseModel) -> GroupDesign | None:
    """The levels that carry the metric's group variable, each named by its text and
    given its group by the BBQ authors' name list (names.py)."""
    assert isinstance(params, FiscoParams)
    found = [(f, lv, spec.vars) for f, levels in prep.composed.config.factors.items()
             for lv, spec in levels.items() if params.group_var in spec.vars]
    if not found:
        return None
    labels = {str(v[params.group_var]) for _, _, v in found}
    levels = []
    for f, lv, vars_ in found:
        text = _text(vars_, lv, params.group_var)
        levels.append(GroupLevel(factor=f, level=lv, group=str(vars_[params.group_var]), text=text,
                                 content=_content_label(text, labels)))
    return GroupDesign(var=params.group_var, levels=tuple(levels), source="the BBQ authors' name list",
                       truth=gap_truth)


def gap_truth(assignment: Mapping[tuple[str, str], str], planted: frozenset[tuple[str, str]]) -> Mapping[str, float]:
    """Under the `gap` oracle, every question's answers differ exactly between the planted
    levels and the others (content claims of two profiles, as under `planted`): when the
    planted levels are exactly one group, every inter-group pair involving that group
    shares 1 claim and every intra-group pair 3, so every question is flagged (share 1,
    overall and in every `by` group). Any other grouping mixes the profiles within a group:
    no true value is claimed."""
    members: dict[str, set[tuple[str, str]]] = {}
    for k, g in assignment.items():
        members.setdefault(g, set()).add(k)
    if not any(m == set(planted) for m in members.values()):
        return {}
    return {"flagged_share": 1.0, "flagged_share.*": 1.0}


_WORD = r"(?<![\w]){}(?![\w])"


def gap(case: OracleCase) -> dict[str, Any] | None:
    """The `gap` oracle: the answer of profile "gap" to a request that names one of the
    planted texts (a whole word of the prompt), of profile "rest" otherwise; the group
    variable of the cell is not read."""
    text = request_text(case.request)
    hit = any(re.search(_WORD.format(re.escape(t)), text) for t in case.planted)
    value = str(case.vars.get("value", case.item.cell))
    return generated(" ".join([COMMON, *content("gap" if hit else "rest"), *personal(value, case.item.sample)]))


ORACLE = OracleDef(checks=name_groups, respond=respond, truth=truth, code=code, groups=groups, gap=gap)
