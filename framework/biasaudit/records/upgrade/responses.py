"""responses.jsonl (a run's audit trail, one line per plan item), version by version.

1. No header: the files written before versions existed (tests/fixtures/format_v1).
2. A header record first (`_util.trail.header`) naming the kind and version; the item
   lines are as in version 1.

A trail's version is its file's, read from the header by the one trail reader; the steps
upgrade one line."""

from __future__ import annotations

from typing import Any

CURRENT = 2


def _lines_unchanged(raw: dict[str, Any]) -> dict[str, Any]:
    """1 -> 2 added the file's header, not a field of a line."""
    return raw


STEPS = {1: _lines_unchanged}
