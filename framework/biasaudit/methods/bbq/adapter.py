"""BBQ's published jsonl as stimuli (`stimuli.format: bbq`).

One row per example as the BBQ authors ship it (data/<Category>.jsonl): `example_id`,
`question_index`, `question_polarity` (neg / nonneg), `context_condition` (ambig /
disambig), `category`, `answer_info` ({ans0: [text, group], ...}), `additional_metadata`
({stereotyped_groups: [...], ...}), `context`, `question`, `ans0`..`ans2` and `label`
(the index of the correct answer). `example_id` restarts at 0 in every category file,
so the stimulus id is `<category>-<example_id>`.

The loader works out which answer is UNKNOWN (its group is `unknown`) and which names
the stereotyped group (the *target*), so the metric can tell a biased answer: the target
for a negative question, the other named person for a non-negative one. BBQ's own
analysis script takes the target from a separate metadata table; a row that carries
`target_loc` (as some redistributions do) is used as is.
"""

from __future__ import annotations

import json
import re
from typing import Any

from biasaudit.data.adapters import Adapter
from biasaudit.registry import ADAPTERS

ANSWERS = ("ans0", "ans1", "ans2")
POLARITIES = ("neg", "nonneg")
CONDITIONS = ("ambig", "disambig")


def _norm(text: Any) -> str:
    return re.sub(r"[\s_\-]+", "", str(text)).lower()


def _label_names(label: str) -> set[str]:
    """A group label and its parts: BBQ's intersectional labels join two groups with a
    hyphen (`F-Black`, `lowSES-M`), and some labels qualify a group (`trans_F`)."""
    return {_norm(label)} | {_norm(part) for part in re.split(r"[-_]", label) if len(part) > 1}


def target_index(info: dict[str, Any], stereotyped: list[str], unknown: int) -> int | None:
    """The answer whose person belongs to a stereotyped group: matched on the answer's
    group label (or its parts) or its text; None when neither or both named answers match."""
    wanted = {_norm(g) for g in stereotyped}
    hits = []
    for k, name in enumerate(ANSWERS):
        if k == unknown:
            continue
        text, label = (list(info[name]) + ["", ""])[:2]
        if (_label_names(str(label)) | {_norm(text)}) & wanted:
            hits.append(k)
    return hits[0] if len(hits) == 1 else None


def _shown(value: Any) -> str:
    """A record's value as JSON writes it (null, true, [1], "2"), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _text(row: dict[str, Any], field: str) -> str:
    """A text field: a JSON string (a number is taken as its digits), never null, a list or an object."""
    value = row[field]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{field} must be a string (or a whole number), got {_shown(value)}")
    return str(value)


def _index(row: dict[str, Any], field: str) -> int:
    """An answer index: a JSON integer 0, 1 or 2; null, a list, a string, a bool or a
    fraction is refused, not coerced."""
    value = row[field]
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1, 2):
        raise ValueError(f"{field} must be the integer 0, 1 or 2, got {_shown(value)}")
    return value


def _answer_info(row: dict[str, Any]) -> dict[str, list[str]]:
    info = row["answer_info"]
    if not isinstance(info, dict):
        raise ValueError(f"answer_info must map ans0, ans1 and ans2 to [text, group], got {_shown(info)}")
    for a in ANSWERS:
        entry = info.get(a)
        if not isinstance(entry, list) or len(entry) < 2 or not all(isinstance(x, str) for x in entry[:2]):
            raise ValueError(f"answer_info.{a} must be [text, group] (two strings), got {_shown(entry)}")
    return info


def _bbq(row: dict[str, Any]) -> dict[str, Any]:
    info = _answer_info(row)
    unknown = [k for k, a in enumerate(ANSWERS) if info[a][1].strip().lower() == "unknown"]
    if len(unknown) != 1:
        raise ValueError("answer_info: exactly one answer must have the group 'unknown'")
    polarity = _text(row, "question_polarity").strip()
    condition = _text(row, "context_condition").strip()
    if polarity not in POLARITIES:
        raise ValueError(f"question_polarity must be 'neg' or 'nonneg', got {polarity!r}")
    if condition not in CONDITIONS:
        raise ValueError(f"context_condition must be 'ambig' or 'disambig', got {condition!r}")
    label = _index(row, "label")
    meta = row.get("additional_metadata") or {}
    stereotyped = meta.get("stereotyped_groups") if isinstance(meta, dict) else None
    if not isinstance(stereotyped, list) or not all(isinstance(g, str) for g in stereotyped):
        raise ValueError(f"additional_metadata.stereotyped_groups must be a list of strings, got {_shown(stereotyped)}")
    given = row.get("target_loc")
    if given not in (None, ""):
        target: int | None = _index(row, "target_loc")
        if target == unknown[0]:
            raise ValueError(f"target_loc must name one of the two people (not the unknown answer), got {given}")
    else:
        target = target_index(info, [str(g) for g in stereotyped], unknown[0])
    if condition == "ambig" and label != unknown[0]:
        raise ValueError("in an ambiguous context the correct answer (label) must be the unknown one")
    answers = [_text(row, a) for a in ANSWERS]
    return {
        "category": _text(row, "category").strip(),
        "context": _text(row, "context"),
        "question": _text(row, "question"),
        "ans0": answers[0], "ans1": answers[1], "ans2": answers[2],
        "answers": answers,
        "label": label,
        "question_polarity": polarity,
        "context_condition": condition,
        "question_index": "" if row.get("question_index") is None else _text(row, "question_index"),
        "unknown_loc": unknown[0],
        "target_loc": -1 if target is None else target,
        "stereotyped_groups": [str(g) for g in stereotyped],
    }


def _id(row: dict[str, Any]) -> str:
    return f"{_text(row, 'category').strip()}-{_text(row, 'example_id')}"


FIELDS = ("category", "context", "question", "ans0", "ans1", "ans2", "answers", "label", "question_polarity",
          "context_condition", "question_index", "unknown_loc", "target_loc", "stereotyped_groups")

ADAPTERS.add("bbq", Adapter(
    reader="jsonl",
    required=("example_id", "context", "question", "ans0", "ans1", "ans2", "label", "context_condition",
              "question_polarity", "category", "answer_info", "additional_metadata"),
    convert=_bbq, fields=FIELDS, row_id=_id))
