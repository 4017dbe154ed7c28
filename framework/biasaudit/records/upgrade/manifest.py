"""A run folder's manifest.json, version by version.

1. The layout of the golden files (tests/fixtures/format_v1), with or without a
   `format_version` key (main wrote `format_version: 1` after those files were made; the
   layout is the same).
2. `format_version` always present: the record reads only the current layout, so a
   manifest written without the key is version 1 and says so only after this step (the
   other keys are as in version 1)."""

from __future__ import annotations

from collections.abc import Callable

from biasaudit.records.json import JSONObject


def _version_stated(raw: JSONObject) -> JSONObject:
    """1 -> 2: the file's keys are unchanged; its version is now always written."""
    return {**raw, "format_version": 2}


CURRENT = 2
STEPS: dict[int, Callable[[JSONObject], JSONObject]] = {1: _version_stated}
