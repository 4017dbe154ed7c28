"""Self-test oracles of the NLI bias scores (`biasaudit selftest`).

The counter-stereotypical premise always gets MIDDLE (neutral first, some entailment);
the stereotypical premise gets ENTAILED (`planted`: every triple; `null`: the triples of
the target side, exactly half) or NEUTRAL (`null`: the other half), so the stereotypical
premise looks more entailed than its counterpart in every triple (`planted`) or in half
of them (`null`). The counter premise's answer depends on nothing: counter premises are
shared by several triples (one request each), and a model answers a request once.
`ties`: one constant probability triple for every premise (a classifier that tells
nothing apart).

True values, by hand from the conditions (s = S's triple, c = S~'s, order E, N, C):
ENTAILED = (.8, .1, .1), NEUTRAL = (.1, .8, .1), MIDDLE = (.35, .45, .2).

- s = ENTAILED, c = MIDDLE: M1 .8 > .35; M2-M4 .8 > .25, .5, .75; M5 .7 > .15; M6
  .7 > -.1; M7 .6 > -.3; M8 .65 > -.075; M9 .65 > -.2; M10 argmax E then N: all hold.
  M11 needs argmax(S~) = C: never.
- s = NEUTRAL, c = MIDDLE: nothing holds (M1 .1 > .35, M2 .1 > .25, M5 0 > .15, M6
  -.7 > -.1, M7 -.8 > -.3, M8 -.4 > -.075, M9 -.75 > -.2, argmax(S) = N).

So `planted`: 100 for M1-M10, 0 for M11; `null`: 50 for M1-M10 (the parity of M1 and
M5-M9), 0 for M11.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from biasaudit.methods.nli_bias.metric import CONDITIONS, RECOMMENDED, NLIBiasParams
from biasaudit.methods.oracle_kit import OracleCase, OracleDef, found_in

ENTAILED = (0.8, 0.1, 0.1)
NEUTRAL = (0.1, 0.8, 0.1)
MIDDLE = (0.35, 0.45, 0.2)
CONSTANT = (0.2, 0.5, 0.3)


def _probs(p: tuple[float, float, float]) -> dict[str, Any]:
    return {"probs": {"entailment": p[0], "neutral": p[1], "contradiction": p[2]}}


def respond(case: OracleCase) -> dict[str, Any] | None:
    p = case.params
    assert isinstance(p, NLIBiasParams)
    if case.kind == "ties":
        return _probs(CONSTANT)
    if case.item.slot != p.stereo:
        return _probs(MIDDLE)
    return _probs(ENTAILED if case.kind == "planted" or case.side else NEUTRAL)


def content(case: OracleCase) -> dict[str, Any] | None:
    """The premise found by its text in the record: the stereotypical one (the record's
    `stereo_premise`) ENTAILED and the counter one MIDDLE (`content`), or the reverse
    (`content_anti`), whatever slot carries them."""
    side = found_in(case.request.text or "", {"stereo": str(case.fields.get("stereo_premise", "")),
                                               "counter": str(case.fields.get("counter_premise", ""))})
    if side is None:
        return None
    return _probs(ENTAILED if (side == "stereo") == (case.kind == "content") else MIDDLE)


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    assert isinstance(params, NLIBiasParams)
    if kind == "planted":
        values = {m: 0.0 if m == "M11" else 100.0 for m in CONDITIONS}
        # every triple holds M6 and M9, so every group of a breakdown is at 100 too
        groups = {f"{m}.*": 100.0 for m in RECOMMENDED}
    elif kind == "null":
        values = {m: 0.0 if m == "M11" else 50.0 for m in CONDITIONS}
        groups = {}  # the balanced assignment is balanced overall, not within each group
    else:
        return {}  # refuse and ties measure nothing
    return {"": values[params.headline], **values, **groups}


ORACLE = OracleDef(respond=respond, truth=truth, content=content,
                   content_source="each record's stereo_premise and counter_premise (WinoQueer-NLI)")
