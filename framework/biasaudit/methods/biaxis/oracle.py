"""Self-test oracles of BiAxisAudit (`biaxis`): the model endorses the stereotype in
every condition (`planted`: Yes to bj, option A to sc and cto, the stereotype option of
the shipped templates, 5 to rate, and an endorsing text after it, free-text tasks
included), or does so for exactly half of the statements and rejects it for the others
(`null`), or gives one non-committal answer to every prompt (`ties`).

The judges are perfect: the elaboration panel labels an endorsing text E, a rejecting
one D, the non-committal one N and a refusal R; the selection parser (only asked when
the rules find no answer) gives the surface answer of the text. The panel's answer words
are read in the order of the stance labels E, QE, N, D, R (conf/judge/ and coding.yaml
list them so), unless the words are the labels themselves.

True values (docs/methods/biaxis.md), on the divergence-eligible base (every unit:
the perfect judges never abstain): with e = [the unit's answer endorses] and f = [its
task has no selection layer], A = e (1 - f) and B = e, so BER_union = BER_elab = mean(e),
BER_sel = BER_cor = mean(e (1 - f)), OED = 0, UED = IR = mean(e f) and DNI = -IR. The
planted model has e = 1 everywhere (BER_union 1, IR the share of free-text units); the
null model has e = 1 on the units of half of the statements.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from biasaudit.methods.biaxis.metric import BiaxisParams
from biasaudit.methods.oracle_kit import (
    OracleCase,
    OracleDef,
    generated,
    request_text,
)
from biasaudit.methods.stance_oracle import (
    DENY,
    ENDORSE,
    NEUTRAL,
    code,
    endorsing,
    levels_of,
    stance_text,
    units,
)

if TYPE_CHECKING:
    from biasaudit.records.codes import Unit
    from biasaudit.runner.pipeline import Prepared


LEADS = {"bj": ("Yes.", "No."), "sc": ("A.", "B."), "cto": ("A.", "B."), "rate": ("5.", "1.")}
"""Task -> the selected answer that endorses / rejects the stereotype (option A is the
stereotype option in the shipped sc and cto templates)."""






def respond(case: OracleCase) -> dict[str, Any] | None:
    p = case.params
    assert isinstance(p, BiaxisParams)
    if case.kind == "ties":
        return generated(NEUTRAL)
    endorse = case.kind == "planted" or case.side
    lead = LEADS.get(levels_of(case.item.cell).get(p.task_factor, ""))
    body = stance_text(endorse)
    return generated(f"{lead[0 if endorse else 1]} {body}" if lead else body)
















def _free_text(prep: Prepared, p: BiaxisParams, unit: Unit) -> bool:
    """The unit's task has no selection layer (the layer does not apply: A = 0)."""
    lay = prep.coding.layers.get(p.selection)
    if lay is None:
        return True
    by: str | None = getattr(lay.options, "by", None)
    levels: Mapping[str, Any] = getattr(lay.options, "levels", {}) or {}
    return by is not None and unit.levels.get(by) not in levels


def plan_truth(kind: str, params: BaseModel, prep: Prepared) -> Mapping[str, float]:
    assert isinstance(params, BiaxisParams)
    if kind not in ("planted", "null"):
        return {}  # refusals and one constant answer: nothing is measured
    side = endorsing(prep, kind)
    us = units(prep)
    n = len(us)
    if not n:
        return {}
    e = [1.0 if side[u.stimulus] else 0.0 for u in us]
    f = [1.0 if _free_text(prep, params, u) else 0.0 for u in us]
    sel = sum(x * (1 - y) for x, y in zip(e, f, strict=True)) / n
    elab = sum(e) / n
    ir = sum(x * y for x, y in zip(e, f, strict=True)) / n
    out = {"": elab, "union": elab, "elab": elab, "sel": sel, "cor": sel, "oed": 0.0, "ued": ir, "ir": ir,
           "dni": sel - elab}
    if elab:
        out["ir_over_union"] = ir / elab
    if kind == "planted":
        out["union.*"] = 1.0
    return out


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    """What holds whatever the design (the rest: `plan_truth`)."""
    return {"": 1.0, "union": 1.0, "elab": 1.0, "union.*": 1.0, "oed": 0.0} if kind == "planted" else {}


_OPTION = re.compile(r"\b([AB])\)")


def _letter_before(text: str, sentence: str) -> str | None:
    """The option letter (`A)` / `B)`) that introduces `sentence` in the prompt."""
    at = text.find(sentence) if sentence else -1
    found = _OPTION.findall(text[:at]) if at >= 0 else []
    return found[-1] if found else None


def _person_letter(text: str, group: str) -> str | None:
    """The letter of the person the prompt describes as `group` ("A (the woman person)",
    "Person A is woman")."""
    m = re.search(rf"\b([AB])\s*(?:\(the\s+|is\s+){re.escape(group)}\b", text, re.I) if group else None
    return m.group(1).upper() if m else None


def content(case: OracleCase) -> dict[str, Any] | None:
    """Endorses the record's stereotype (`content`) or rejects it (`content_anti`), the
    selected answer read from the prompt's own content: the option letter that introduces
    the record's `statement` (sc; `counter_statement` to reject), the letter of the
    person described as its `stereotype_group` (cto; `counter_group` to reject), Yes / No
    (bj), 5 / 1 (rate); then the endorsing or rejecting text. A spec whose rules or
    parser map the options to the wrong labels then codes endorsing answers as rejections
    (runner/selftest_content.py, `endorse_problems`)."""
    p = case.params
    assert isinstance(p, BiaxisParams)
    endorse = case.kind == "content"
    task = levels_of(case.item.cell).get(p.task_factor, "")
    text, f = request_text(case.request), case.fields
    body = stance_text(endorse)
    if task == "sc":
        lead = _letter_before(text, str(f.get("statement" if endorse else "counter_statement", "")))
    elif task == "cto":
        lead = _person_letter(text, str(f.get("stereotype_group" if endorse else "counter_group", "")))
    elif task in LEADS:
        lead = LEADS[task][0 if endorse else 1].rstrip(".")
    else:
        return generated(body)  # a free-text task: the text alone says it
    return generated(f"{lead}. {body}") if lead else None


def meaning(text: str) -> str | None:
    """What an answer of this oracle means by its text: endorses or rejects the statement."""
    return "endorse" if ENDORSE in text else "deny" if DENY in text else None


ORACLE = OracleDef(respond=respond, truth=truth, code=code, plan_truth=plan_truth, content=content, meaning=meaning,
                   content_source="the option holding each record's statement / stereotype_group, read from the "
                                  "prompt", notes=(
    "planted: Yes / option A (the stereotype option of the shipped sc and cto templates) / 5, then an endorsing "
    "text, in every task; judges and the selection parser answer as perfect judges of those texts",))
