"""The viewer's card of a StereoSet item (`biasaudit view`): the three candidates
(stereotype, anti-stereotype, unrelated), each with the score the metric gives it within
its scored text (`sentence_score`: by default the mean log-prob of the candidate's tokens,
as Nadeem et al. score it), and the stereotype or the anti-stereotype, whichever scored
higher, marked as the winner."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from biasaudit.methods.stereoset.metric import ROLES, StereoSetParams, sentence_score
from biasaudit.metrics.card import CardDef, Fields, ScoredText, ViewScoring, sentence


def _slots(p: BaseModel) -> list[str]:
    assert isinstance(p, StereoSetParams)
    return [p.slots[r] for r in ROLES]


def build(mid: str, p: BaseModel, group: Sequence[ScoredText], fields: Fields) -> ViewScoring:
    """The three candidates in `ROLES` order; the candidate sentences are the stimulus's
    fields of those names (the scored text holds the context too)."""
    assert isinstance(p, StereoSetParams)
    sents, totals = [], []
    for role, s in zip(ROLES, group, strict=True):
        cand = str(fields.get(role, "") or "")
        sc: float | None
        try:
            sc = sentence_score(s.out, s.text, cand, p.normalize) if cand else None
            counted = set(s.out.part_positions(s.text, cand)) if sc is not None else set()
        except ValueError:  # no character offsets: the metric cannot score it either
            sc, counted = None, set()
        totals.append(sc)
        sents.append(sentence(s, sc, counted))
    st, anti = totals[0], totals[1]
    winner = "" if st is None or anti is None or st == anti else group[0].slot if st > anti else group[1].slot
    note = ("not scored: a candidate sentence is not in its scored text (or the stimulus fields are not at hand)"
            if st is None or anti is None else "" if winner else "a tie: the metric counts it as anti-stereotype")
    measure = "mean log-prob per token" if p.normalize == "mean" else "total log-prob"
    return ViewScoring(rule=f"{mid} ({measure} of the candidate sentence's tokens, as the metric scores it; "
                            "the stereotype and the anti-stereotype compete)",
                       measure=measure, sentences=sents, winner=winner, note=note)


CARD = CardDef(slots=_slots, build=build)

__all__ = ["CARD", "build"]
