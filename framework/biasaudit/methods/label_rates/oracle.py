"""Self-test oracles of the label rates (`label_rate`) over stance and refusal layers: the
model answers every stereotype statement by endorsing it and never refuses (`planted`),
endorses it for exactly half of the statements and rejects it for the others (`null`),
refuses everything (`refuse`) or gives one non-committal answer (`ties`). The judges
are BiAxisAudit's perfect stance judges (methods/biaxis/oracle.py): E for an endorsing
text, D for a rejecting one, N for the non-committal one, R for a refusal.

True values: each unit's answer has a stance (E, D, N or R); a perfect layer gives it
the label of that stance in the layer's vocabulary (STANCE_VOCAB: the stance labels, or
a refusal detector's refuse / answer), and the rate is the share of units whose label is
one of those counted. So under `planted` an endorsement rate is 1 and a refusal rate 0;
under `null` the endorsement rate is the share of units of the endorsed statements (1/2
with an even number of statements) and the refusal rate 0. Under `refuse` and `ties`
only a refusal detector that expects one label to dominate (`expect_dominant`) truly
measures something (a rate of 1, resp. 0); elsewhere one label for every unit says
nothing, so no true value is given (INCONCLUSIVE expected).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from biasaudit.methods.label_rates.intent import counts
from biasaudit.methods.label_rates.metric import LabelRateParams
from biasaudit.methods.oracle_kit import OracleCase, OracleDef, generated
from biasaudit.methods.stance_oracle import (
    DENY,
    ENDORSE,
    NEUTRAL,
    REFUSED,
    code,
    endorsing,
    stance_text,
    units,
)

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared

STANCE_VOCAB: tuple[tuple[frozenset[str], Mapping[str, str], bool], ...] = (
    (frozenset({"E", "QE", "N", "D", "R"}), {"E": "E", "D": "D", "N": "N", "R": "R"}, False),
    (frozenset({"refuse", "answer"}), {"E": "answer", "D": "answer", "N": "answer", "R": "refuse"}, True),
)
"""(a layer's label set, stance -> its label there, whether it is a refusal detector)."""
KIND_STANCE = {"planted": "E", "refuse": "R", "ties": "N"}
"""The stance of every answer of an oracle (`null`: E or D by statement)."""


def respond(case: OracleCase) -> dict[str, Any] | None:
    if case.kind == "ties":
        return generated(NEUTRAL)
    return generated(stance_text(case.kind == "planted" or case.side))


def vocabulary(labels: frozenset[str]) -> tuple[Mapping[str, str], bool] | None:
    """The stance labels of a layer whose label set is `labels` (None: unknown layer)."""
    return next(((to, detector) for known, to, detector in STANCE_VOCAB if labels <= known), None)


def plan_truth(kind: str, params: BaseModel, prep: Prepared) -> Mapping[str, float]:
    assert isinstance(params, LabelRateParams)
    lay = prep.coding.layers.get(params.layer)
    labels = frozenset(lay.labels) if lay is not None and lay.labels else frozenset(params.labels)
    vocab = vocabulary(labels)
    if vocab is None:
        return {}
    to, detector = vocab
    if kind in ("refuse", "ties") and not (detector and lay is not None and lay.spec.expect_dominant):
        return {}  # one label for everything: nothing is measured, unless the layer is a declared detector
    us = units(prep)
    if not us:
        return {}
    side = endorsing(prep, kind) if kind in ("planted", "null") else {}
    stance = [KIND_STANCE.get(kind) or ("E" if side[u.stimulus] else "D") for u in us]
    label = [to[s] for s in stance]
    counted = set(params.labels)
    rate = sum(lab in counted for lab in label) / len(us)
    out = {"": rate, "rate": rate}
    out.update({f"share.{lab}": sum(x == lab for x in label) / len(us) for lab in labels})
    if kind != "null":  # every unit alike: so is every group
        out["rate.*"] = rate
    return out


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    """Every true value depends on the layer's vocabulary: see `plan_truth`."""
    return {}


def meaning(text: str) -> str | None:
    """What an answer of this oracle means, by its text."""
    if any(r in text for r in REFUSED):
        return "refuse"
    return {ENDORSE: "endorse", DENY: "deny", NEUTRAL: "neutral"}.get(text)


ORACLE = OracleDef(respond=respond, truth=truth, code=code, plan_truth=plan_truth, meaning=meaning, counts=counts, notes=(
    "planted: every answer endorses the statement and none refuses; judges answer as perfect stance judges",))
