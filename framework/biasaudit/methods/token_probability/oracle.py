"""Self-test oracles of the token-probability bias score: the stereotyping sentence
(`more` slot) scored above the other (`planted`), or above it for exactly half of the
pairs (`null`), or every token certain (log-prob 0: every pair ties in every mode)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from biasaudit.methods.oracle_kit import OracleCase, OracleDef, scored_tokens
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


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    if kind not in ("planted", "null"):
        return {}
    value = 100.0 if kind == "planted" else 50.0
    return {"": value, "score": value, "direction.*": value, "neutral": 0.0}


ORACLE = OracleDef(respond=respond, truth=truth)
