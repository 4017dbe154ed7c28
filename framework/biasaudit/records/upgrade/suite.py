"""A suite folder's summary.json (`records.suite.SuiteSummary`), version by version.

1. Without `format_version` (written before versions existed), or with `format_version: 1`.
2. Estimates may carry their typed `group` (factor, levels, reference; issue 40): an
   optional field, absent from format 1, whose estimates read as they were (no group)."""

from __future__ import annotations

from typing import Any

CURRENT = 2


def _groups_optional(raw: dict[str, Any]) -> dict[str, Any]:
    """1 -> 2 added an optional field; a format-1 file's keys are all still read, and the
    record then holds today's layout."""
    return {**raw, "format_version": 2}


STEPS = {1: _groups_optional}
