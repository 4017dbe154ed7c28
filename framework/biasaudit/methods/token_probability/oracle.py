"""Self-test oracles of the token-probability bias score: the stereotyping sentence
(`more` slot) scored above the other (`planted`), or above it for exactly half of the
pairs (`null`), or every token certain (log-prob 0: every pair ties in every mode)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from biasaudit.methods.oracle_kit import (
    OracleCase,
    OracleDef,
    found_in,
    request_text,
    scored_tokens,
)
from biasaudit.methods.token_probability.metric import BiasScoreParams

HIGH, LOW = -1.0, -3.0
"""Per-token log-probs of the preferred and the other sentence: a pair differs by a word
or two, so the preferred sentence wins in `ar_full` as in the shared-token modes."""


def respond(case: OracleCase) -> dict[str, Any] | None:
    p = case.params
    assert isinstance(p, BiasScoreParams)
    text = case.request.text or ""
    masked = case.request.kind == "pseudo_loglik"
    if case.kind == "ties":
        return scored_tokens(text, 0.0, special_end=masked)
    more = case.item.slot == p.more
    prefer_more = True if case.kind == "planted" else case.side
    return scored_tokens(text, HIGH if more == prefer_more else LOW, special_end=masked)


STEREO_FIELDS = ("sent_more", "sent_x", "more")
"""The record's stereotyping sentence, first found: CrowS-Pairs' `sent_more` (the more
stereotyping sentence in both directions: its `stereo_antistereo` says whether it
demonstrates a stereotype or `sent_less` violates one, and the published metric counts
a preference for `sent_more` in both, Nangia et al. 2020, metric.py), WinoQueer's `sent_x`
(the queer-identity sentence), or the canonical field the loaders make of them."""
OTHER_FIELDS = ("sent_less", "sent_y", "less")


def _first(fields: Mapping[str, Any], names: tuple[str, ...]) -> str:
    return next((str(fields[n]) for n in names if fields.get(n)), "")


def content(case: OracleCase) -> dict[str, Any] | None:
    """Prefers the request carrying the record's stereotyping sentence (`content`), or the
    other one (`content_anti`), found by its text, whatever slot holds it."""
    text = case.request.text or ""
    side = found_in(request_text(case.request), {"stereo": _first(case.fields, STEREO_FIELDS),
                                                 "other": _first(case.fields, OTHER_FIELDS)})
    if side is None:
        return None
    prefer = (side == "stereo") == (case.kind == "content")
    return scored_tokens(text, HIGH if prefer else LOW, special_end=case.request.kind == "pseudo_loglik")


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    if kind not in ("planted", "null"):
        return {}
    value = 100.0 if kind == "planted" else 50.0
    return {"": value, "score": value, "direction.*": value, "neutral": 0.0}


ORACLE = OracleDef(respond=respond, truth=truth, content=content,
                   content_source="the stereotyping sentence of each record (CrowS-Pairs sent_more, WinoQueer sent_x)")
