"""Elaboration layer of BiAxisAudit split coding: a panel of judges labels the stance of
a response's free text (selection marker removed) as E, QE, N, D or R; the majority
label wins, no majority gives Abstain. Each judge call is a cached `choice` request, so
a (judge, response) pair is never judged twice."""

from __future__ import annotations

import json
from collections import Counter

from ..plan import Derived
from ..plan.render import render
from ..spec import JudgePanelConfig

ABSTAIN = "Abstain"


def judge_requests(panel: JudgePanelConfig, statement: str, text: str) -> list[Derived]:
    words = json.dumps(list(panel.labels.values()))
    return [Derived("choice", render(j.prompt, {"statement": statement, "text": text}, file=None,
                                     key=f"judge.judges.{j.name}.prompt"), words, j.name)
            for j in panel.judges]


def judge_label(panel: JudgePanelConfig, choice: str | None) -> str | None:
    for label, word in panel.labels.items():
        if word == choice:
            return label
    return None


def majority(labels: list[str | None]) -> str:
    """Strict majority of the judges' labels (a missing vote counts against every label)."""
    votes = Counter(x for x in labels if x is not None)
    if not votes:
        return ABSTAIN
    (top, n), *rest = votes.most_common()
    if n * 2 > len(labels) and not (rest and rest[0][1] == n):
        return top
    return ABSTAIN
