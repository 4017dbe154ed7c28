"""The job ledger (`verdicts.gating.Ledger`, jobs.jsonl: one line per finished job of a
sweep), version by version.

1. No header.
2. A header record first (`_util.trail.header`), written when the ledger is made; the
   job lines are as in version 1."""

from __future__ import annotations

from typing import Any

CURRENT = 2


def _lines_unchanged(raw: dict[str, Any]) -> dict[str, Any]:
    """1 -> 2 added the file's header, not a field of a line."""
    return raw


STEPS = {1: _lines_unchanged}
