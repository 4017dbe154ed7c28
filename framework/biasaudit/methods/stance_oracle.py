"""A perfect responder and judge for stance answers (endorse / deny / neutral / refuse), shared by the
self-tests of the methods that code generated answers for stance (BiAxisAudit, label rates)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from biasaudit.coding.base import CodingRequest
from biasaudit.methods.oracle_kit import (
    REFUSAL_TEXT,
    balanced_sides,
)

if TYPE_CHECKING:
    from biasaudit.records.codes import Unit
    from biasaudit.runner.pipeline import Prepared


ENDORSE = "The statement is accurate, and I agree with it."
DENY = "The statement is a stereotype, and I reject it."
NEUTRAL = "Neither; it depends on the person, and I take no side."
"""The constant answer of `ties` (an N in every task that has a neutral answer)."""
REFUSED = ("I cannot answer that", REFUSAL_TEXT)
"""The refusal as the judges may see it (the selection's `I'm sorry` stripped)."""
STANCES = ("E", "QE", "N", "D", "R")
"""The stance labels, in the order the shipped panels list their answer words."""
SURFACE = {"E": ("yes", "a", "5"), "D": ("no", "b", "1"), "N": ("neither", "3"), "R": ("refuse",)}
"""Stance -> the parser's answer words that report it (the first one offered is given)."""


def levels_of(cell: str) -> dict[str, str]:
    """A cell id (`factor=level,...`, plan.design.cell_id) as factor -> level."""
    return dict(kv.split("=", 1) for kv in cell.split(",") if "=" in kv)


def stance_text(endorse: bool) -> str:
    return ENDORSE if endorse else DENY


MARKS = (("E", ENDORSE.split(", ")[-1]), ("D", DENY.split(", ")[-1]), ("N", NEUTRAL.split(", ")[-1]),
         ("R", REFUSED[0]))
"""Stance -> the end of its text, which survives the selection's strip (`Neither` of a
`ties` answer is the sc and cto rules' span)."""


def stance_of(text: str) -> str | None:
    """The stance label a perfect judge gives the oracle's text found in `text` (a
    judge's prompt), or None."""
    return next((label for label, mark in MARKS if mark in text), None)


def choice(words: Sequence[str], word: str) -> dict[str, Any]:
    """A `choice` output that puts all probability on `word`."""
    return {"probs": {w: 1.0 if w == word else 0.0 for w in words}, "choice": word}


def answer_word(words: Sequence[str], stance: str) -> str | None:
    """The word a perfect judge picks among `words` for `stance`: a stance panel (five
    words, in the order of STANCES, or the labels themselves) or a surface-answer parser."""
    if set(words) == set(STANCES):
        return stance
    if len(words) == len(STANCES) and not any(w.lower() in SURFACE["R"] for w in words):
        return words[STANCES.index(stance)]
    return next((w for w in words if w.lower() in SURFACE.get(stance, ())), None)


def code(kind: str, request: CodingRequest, intents: Mapping[str, str]) -> dict[str, Any] | None:
    """A perfect judge of the oracle's answers: the stance panel and the selection parser."""
    if request.kind != "choice":
        return None
    words = request.decoding().choices
    stance = stance_of(request.user or "")
    word = answer_word(words, stance) if stance is not None else None
    return choice(words, word) if word is not None else None


def endorsing(prep: Prepared, kind: str) -> dict[str, bool]:
    """Stimulus -> whether the oracle `kind` endorses the stereotype on it."""
    ids = [s.id for s in prep.stimuli.stimuli]
    if kind == "planted":
        return dict.fromkeys(ids, True)
    return balanced_sides(ids, prep.composed.config.runtime.seed)


def units(prep: Prepared) -> list[Unit]:
    from biasaudit.coding.units import units_of

    return list(units_of(prep))  # (a UnitTable over the plan: a list here, read more than once)
