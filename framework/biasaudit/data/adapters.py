"""Stimulus adapters: turn the rows of a published format into canonical fields.

Each adapter names the columns it needs; a missing column is an error naming the file.
Adapters are found by name (`stimuli.format`) in `ADAPTERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from biasaudit._util.fileio import names_excerpt
from biasaudit.errors import DataError
from biasaudit.registry import ADAPTERS as ADAPTERS  # re-exported: adapters register here


@dataclass(frozen=True)
class Adapter:
    reader: str
    """`csv`, `jsonl`, `json_map` (an object of id -> record) or `json` (one JSON document
    whose records `rows` lists)."""
    required: tuple[str, ...]
    """Columns the file must have."""
    convert: Callable[[dict[str, Any]], dict[str, Any]]
    fields: tuple[str, ...]
    """Canonical fields the adapter produces (known before reading, for validation)."""
    id_column: str | None = None
    row_id: Callable[[dict[str, Any]], str] | None = None
    """The stimulus id made from a row, when no single column is unique (BBQ numbers its
    examples per category file); `stimuli.id_field` overrides it."""
    rows: Callable[[Any], list[dict[str, Any]]] | None = None
    """For `reader: json`: the records of the parsed document (e.g. a benchmark file that
    nests its items under split names, or a copy that lists them bare); raises ValueError
    naming the shape expected and the one found when it is neither."""
    optional: tuple[str, ...] = ()
    """Metadata columns some copies of the format carry and the published file lacks: a
    `by:` breakdown on one of them that the file does not have is skipped, with a note in
    the report (`checks.check_breakdowns`, `metrics.disaggregate.by_group`), instead of
    refused as a typo would be."""


def _identity(row: dict[str, Any]) -> dict[str, Any]:
    return dict(row)


ADAPTERS.add("csv", Adapter(reader="csv", required=(), convert=_identity, fields=()))
ADAPTERS.add("jsonl", Adapter(reader="jsonl", required=(), convert=_identity, fields=()))


def _crows(row: dict[str, Any]) -> dict[str, Any]:
    direction = str(row["stereo_antistereo"]).strip()
    if direction not in ("stereo", "antistereo"):
        raise ValueError(f"stereo_antistereo must be 'stereo' or 'antistereo', got {direction!r}")
    return {
        "more": row["sent_more"],
        "less": row["sent_less"],
        "direction": direction,
        "bias_type": str(row["bias_type"]).strip(),
    }


# CrowS-Pairs (Nangia et al. 2020), crows_pairs_anonymized.csv as published: the first,
# unnamed column is the row index; annotations/anon_* columns are ignored.
ADAPTERS.add(
    "crows_pairs",
    Adapter(
        reader="csv",
        required=("sent_more", "sent_less", "stereo_antistereo", "bias_type"),
        convert=_crows,
        fields=("more", "less", "direction", "bias_type"),
        id_column="",
    ),
)


def _winoqueer(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "more": row["sent_x"],
        "less": row["sent_y"],
        "group": str(row["Gender_ID_x"]).strip(),
        "counter_group": str(row["Gender_ID_y"]).strip(),
        "bias_type": str(row["Gender_ID_x"]).strip(),
        "direction": "stereo",
    }


# WinoQueer (Felkner et al. 2023): sent_x is the queer-identity sentence, sent_y its
# counterfactual; Gender_ID_x names the target group.
ADAPTERS.add(
    "winoqueer",
    Adapter(
        reader="csv",
        required=("Gender_ID_x", "Gender_ID_y", "sent_x", "sent_y"),
        convert=_winoqueer,
        fields=("more", "less", "group", "counter_group", "bias_type", "direction"),
        id_column="",
    ),
)


def check_columns(adapter: Adapter, header: list[str], file: str, fmt: str) -> None:
    missing = [c for c in adapter.required if c not in header]
    if missing:
        raise DataError(
            f"the {fmt} format needs column(s) {', '.join(missing)}; the file has "
            f"{names_excerpt(header) if header else 'no columns'}",
            file=file,
            key="stimuli.format",
            hint=f"use the published {fmt} file unchanged, or `format: csv` with a `fields` mapping",
        )


def _blimp(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "a": row["sentence_good"],
        "b": row["sentence_bad"],
        "phenomenon": str(row.get("UID") or row.get("linguistics_term") or ""),
        "category": str(row.get("linguistics_term") or row.get("field") or ""),
    }


# BLiMP (Warstadt et al. 2020) jsonl: sentence_good is the grammatical sentence (slot a).
ADAPTERS.add(
    "blimp",
    Adapter(reader="jsonl", required=("sentence_good", "sentence_bad"), convert=_blimp,
            fields=("a", "b", "phenomenon", "category"), id_column="pair_id"),
)


def _dust(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "a": row["underspecified sentence"],
        "b": row["control sentence"],
        "type": str(row["type"]).strip(),
        "phenomenon": str(row["phenomenon"]).strip(),
        "category": str(row["type"]).strip(),
    }


# DUST (Wildenburg et al. 2024) csv: the underspecified sentence goes in slot a.
ADAPTERS.add(
    "dust",
    Adapter(reader="csv", required=("underspecified sentence", "control sentence", "type", "phenomenon"),
            convert=_dust, fields=("a", "b", "type", "phenomenon", "category")),
)


def _word_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("["):
        import json

        return [str(v) for v in json.loads(text)]
    return [w for w in text.replace("|", " ").split() if w]


def _pivotal(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key in ("pivotal_a", "pivotal_b"):
        if key in row and row[key] not in (None, ""):
            out[key] = _word_list(row[key])
    return out


# Plain minimal pairs with explicit pivotal words: columns a, b and optional pivotal_a /
# pivotal_b ("w1|w2" or a JSON list), which override the word-level diff.
ADAPTERS.add(
    "pivotal_pairs",
    Adapter(reader="csv", required=("a", "b"), convert=_pivotal, fields=("a", "b", "pivotal_a", "pivotal_b")),
)
ADAPTERS.add(
    "pivotal_pairs_jsonl",
    Adapter(reader="jsonl", required=("a", "b"), convert=_pivotal, fields=("a", "b", "pivotal_a", "pivotal_b")),
)


def _nli_triple(row: dict[str, Any]) -> dict[str, Any]:
    return dict(row)


# WinoQueer-NLI csv as published (katyfelkner/wq-nli, data/winoqueer_nli.csv): exactly the
# columns stereo_premise, counter_premise, hypothesis. Metadata columns of annotated copies
# (the authors' datasets_with_metadata add name, pronoun, template, counterfactual; the
# team's sample predicate, predicate_category, identity) pass through, and a breakdown by
# one the file lacks is skipped with a note.
_NLI = Adapter(reader="csv", required=("stereo_premise", "counter_premise", "hypothesis"), convert=_nli_triple,
               fields=("stereo_premise", "counter_premise", "hypothesis"),
               optional=("predicate", "predicate_category", "identity", "counterfactual", "name", "pronoun",
                         "template"))
ADAPTERS.add("wq_nli", _NLI)
ADAPTERS.add("nli_triples", _NLI)


def _clear_bias(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "category": str(row["BIAS CATEGORY"]).strip(),
        "stereotype_option": str(row["STEREOTYPE"]).strip(),
        "counter_option": str(row["COUNTER-STEREOTYPE"]).strip(),
        "statement": str(row["PROMPT"]).strip(),
    }


# CLEAR-Bias-style csv: the prompt is the statement, the two option texts are the
# stereotype and counter-stereotype answers.
ADAPTERS.add("clear_bias", Adapter(reader="csv", required=("BIAS CATEGORY", "STEREOTYPE", "COUNTER-STEREOTYPE", "PROMPT"),
                                   convert=_clear_bias, fields=("category", "stereotype_option", "counter_option", "statement")))
ADAPTERS.add("statements", Adapter(reader="csv", required=("statement", "category"), convert=_identity,
                                   fields=("statement", "category")))
