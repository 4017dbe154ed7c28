"""Stimulus adapters: turn the rows of a published format into canonical fields.

Each adapter names the columns it needs; a missing column is an error naming the file.
Adapters are found by name (`stimuli.format`) in `ADAPTERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import DataError
from ..registry import Registry


@dataclass(frozen=True)
class Adapter:
    reader: str
    """`csv` or `jsonl`."""
    required: tuple[str, ...]
    """Columns the file must have."""
    convert: Callable[[dict[str, Any]], dict[str, Any]]
    fields: tuple[str, ...]
    """Canonical fields the adapter produces (known before reading, for validation)."""
    id_column: str | None = None


ADAPTERS: Registry[Adapter] = Registry("stimulus format")


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
            f"{', '.join(h or '<unnamed>' for h in header)}",
            file=file,
            key="stimuli.format",
            hint=f"use the published {fmt} file unchanged, or `format: csv` with a `fields` mapping",
        )
