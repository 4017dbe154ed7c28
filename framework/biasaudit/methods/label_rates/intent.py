"""What a label-rate metric counts, in words the self-test can check against the meaning
of an answer (runner/selftest_content.py: a rate counting the wrong label).

An impact ratio is a ratio of selection rates (NYC Local Law 144): it counts selections,
whatever the spec calls them. A `label_rate` is generic, so its intent is read from the
id the spec gives it (`refusal_rate` counts refusals, `endorsement_rate` endorsements);
an id that names no meaning below is not checked.
"""

from __future__ import annotations

from pydantic import BaseModel

ID_WORDS = (("refus", "refuse"), ("endors", "endorse"), ("agree", "endorse"), ("invit", "select"),
            ("select", "select"), ("hire", "select"), ("reject", "reject"), ("deny", "deny"), ("denial", "deny"))
"""A word in a label-rate metric's id -> the meaning of the answers it counts."""


def counts(name: str, metric_id: str, params: BaseModel) -> str | None:
    """The meaning of the answers metric `metric_id` (registered as `name`) counts."""
    if name == "impact_ratio":
        return "select"
    if name != "label_rate":
        return None
    low = metric_id.lower()
    return next((meant for word, meant in ID_WORDS if word in low), None)


__all__ = ["ID_WORDS", "counts"]
