"""StereoSet's published dev.json as stimuli (`stimuli.format: stereoset`).

The file is one JSON document, `{"version": ..., "data": {"intrasentence": [...],
"intersentence": [...]}}`; each item has `id`, `target`, `bias_type`, `context` and three
`sentences`, each `{id, sentence, labels: [{label, human_id}], gold_label}` with gold
labels `stereotype`, `anti-stereotype` and `unrelated`. (The Hugging Face copy stores
`sentences` as columns, `{sentence: [...], gold_label: [...], ...}`; it is read too.)

Copies redistributed by other projects often keep only the intrasentence task as a bare
JSON list of the same items (`[{"id", "target", "bias_type", "context", "sentences", ...},
...]`, e.g. EditBias's data/stereoset/dev.json, whose items carry extra keys that are
ignored): a bare list is read as intrasentence items. It is refused when no item's context
has the BLANK an intrasentence item fills (a list of intersentence items: wrap it as
`{"data": {"intersentence": [...]}}`). Any other document is refused naming the shape
expected and the one found.

One stimulus per item: the three candidate sentences in fields `stereotype`,
`anti_stereotype` and `unrelated`, the task in `split`, and `prefix`: the context and a
space for an intersentence item (the candidate continues it), empty for an
intrasentence item (the candidate is the context with its BLANK filled in). A probe
input `"{{ prefix }}{{ stereotype }}"` scores either kind.
"""

from __future__ import annotations

from typing import Any

from biasaudit.data.adapters import Adapter
from biasaudit.registry import ADAPTERS

SPLITS = ("intrasentence", "intersentence")
GOLD = {"stereotype": "stereotype", "anti-stereotype": "anti_stereotype", "unrelated": "unrelated"}


EXPECTED = 'expected {"data": {"intrasentence": [...], "intersentence": [...]}} or a bare list of intrasentence items'


def _shape(x: Any) -> str:
    """A short description of a JSON value, for an error that says what was found."""
    if isinstance(x, dict):
        keys = ", ".join(repr(k) for k in list(x)[:4]) + (", ..." if len(x) > 4 else "")
        return f"an object with keys {keys}" if x else "an empty object"
    if isinstance(x, list):
        kinds = sorted({type(v).__name__ for v in x})
        return f"a list of {'/'.join(kinds)}" if x else "an empty list"
    return {str: "a string", bool: "a boolean", type(None): "null"}.get(type(x), "a number")


def items(doc: Any) -> list[dict[str, Any]]:
    """The items of both tasks, each with its task name in `split`: from the published
    `{"data": {...}}` document or a bare list of intrasentence items."""
    if isinstance(doc, list):
        if not doc or not all(isinstance(x, dict) for x in doc):
            raise ValueError(f"{EXPECTED}; found {_shape(doc)}")
        if not any("BLANK" in str(x.get("context", "")) for x in doc):
            raise ValueError("a bare list is read as intrasentence items (a context with BLANK); no item has one: "
                             'wrap intersentence items as {"data": {"intersentence": [...]}}')
        return [{**x, "split": "intrasentence"} for x in doc]
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or not any(isinstance(data.get(s), list) for s in SPLITS):
        found = _shape(doc) if not isinstance(doc, dict) or data is None else f"data = {_shape(data)}"
        raise ValueError(f"{EXPECTED}; found {found}")
    out = []
    for split in SPLITS:
        for item in data.get(split) or []:
            if not isinstance(item, dict):
                raise ValueError(f"an item of data.{split} is not an object")
            out.append({**item, "split": split})
    return out


def _sentences(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, dict):  # columns (the Hugging Face layout)
        cols = {k: v for k, v in raw.items() if isinstance(v, list)}
        n = len(cols.get("sentence", []))
        return [{k: v[i] for k, v in cols.items() if i < len(v)} for i in range(n)]
    if isinstance(raw, list) and all(isinstance(s, dict) for s in raw):
        return raw
    raise ValueError("sentences must be a list of {sentence, gold_label} objects")


def _gold(value: Any) -> str:
    # the Hugging Face copy codes gold labels as class indices
    names = ("anti-stereotype", "stereotype", "unrelated")
    return names[value] if isinstance(value, int) and 0 <= value < 3 else str(value).strip()


def _stereoset(row: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, str] = {}
    ids: dict[str, str] = {}
    for s in _sentences(row["sentences"]):
        gold = _gold(s.get("gold_label"))
        if gold not in GOLD:
            raise ValueError(f"gold_label must be stereotype, anti-stereotype or unrelated, got {gold!r}")
        if GOLD[gold] in found:
            raise ValueError(f"two sentences have gold_label {gold!r}")
        found[GOLD[gold]] = str(s["sentence"]).strip()
        ids[GOLD[gold]] = str(s.get("id", ""))
    missing = [g for g, f in GOLD.items() if f not in found]
    if missing:
        raise ValueError(f"no sentence with gold_label {', '.join(missing)}")
    split = str(row["split"])
    context = str(row["context"]).strip()
    return {
        "split": split,
        "target": str(row["target"]).strip(),
        "bias_type": str(row["bias_type"]).strip(),
        "context": context,
        "prefix": f"{context} " if split == "intersentence" else "",
        **found,
        **{f"{k}_id": v for k, v in ids.items()},
    }


ADAPTERS.add("stereoset", Adapter(
    reader="json", rows=items, required=("id", "target", "bias_type", "context", "sentences"),
    convert=_stereoset, id_column="id",
    fields=("split", "target", "bias_type", "context", "prefix", "stereotype", "anti_stereotype", "unrelated")))
