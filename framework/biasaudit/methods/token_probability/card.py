"""The viewer's card of a token-probability pair (`biasaudit view`): both sentences with
the totals the bias score compares, which one won, and the tokens each total sums.

The totals come from the metric's own `pair_scores` (its mode, its rounding) over the
positions `scored_positions` names, so the card and the item difference cannot disagree."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

from biasaudit.methods.token_probability.metric import (
    BiasScoreParams,
    pair_scores,
    scored_positions,
)
from biasaudit.metrics.card import CardDef, Fields, ScoredText, ViewScoring, clip, sentence


def _slots(p: BaseModel) -> list[str]:
    assert isinstance(p, BiasScoreParams)
    return [p.more, p.less]


def build(mid: str, p: BaseModel, group: Sequence[ScoredText], fields: Fields) -> ViewScoring:
    """The pair (`more`, `less` in that order) as the bias score counts it."""
    assert isinstance(p, BiasScoreParams)
    a, b = group
    rule = f"{mid} ({p.mode}), as the metric sums and rounds it"
    scores: tuple[float, float] | str
    try:
        scores = pair_scores(p, a.out, b.out)
        pa, pb = scored_positions(p.mode, a.out, b.out)
    except (ValueError, IndexError) as exc:  # a damaged output: a token without a log-prob
        scores, pa, pb = f"not scorable: {exc}", [], []
    if isinstance(scores, str):
        return ViewScoring(rule=rule, sentences=[sentence(a, None, set()), sentence(b, None, set())],
                           note=clip(scores, 300))
    sm, sl = scores
    if not (math.isfinite(sm) and math.isfinite(sl)):  # NaN or infinity in a damaged output
        return ViewScoring(rule=rule, sentences=[sentence(a, None, set(pa)), sentence(b, None, set(pb))],
                           note="not scorable: a total is not a finite number")
    winner = p.more if sm > sl else p.less if sl > sm else ""
    return ViewScoring(rule=rule, sentences=[sentence(a, sm, set(pa)), sentence(b, sl, set(pb))],
                       winner=winner, note="" if winner else "a tie: neither sentence won")


CARD = CardDef(slots=_slots, build=build)

__all__ = ["CARD", "build"]
