"""An annotation sheet's sampling record (`<sheet>.sample.json`, written by `biasaudit
annotate export` and by the viewer's review), version by version.

1. No `format_version` key: the records biasaudit wrote before versions existed. The
   first of them (before 2026-11) lacked the hashes of the text as shown: each unit had
   only `answer_sha256`, of the exact answer, and no `shown_sha256` or `prompt_sha256`;
   the record had no `selection` (every sheet was drawn at random: `random`). Later
   records without the key have the hashes (and `selection`, and `seed` null for a
   chosen sample); they are read as they are.
2. `format_version: 2` always written; every unit has `shown_sha256` and `prompt_sha256`,
   unless `exact_answers` is true, which only the 1 -> 2 step sets: a format-1 record
   without the shown hashes, whose sheet's answer cells must then be exactly as exported
   (a spreadsheet that rewrote line ends cannot be told from an edit), and whose prompt
   cells are not checked (nothing of them was recorded)."""

from __future__ import annotations

from collections.abc import Callable

from biasaudit.records.json import JSONObject


def _shown_hashes_stated(raw: JSONObject) -> JSONObject:
    """1 -> 2: `selection` is `random` where absent; a record whose units lack the hashes
    of the text as shown says so once, in `exact_answers`, instead of each reader
    inferring it from missing keys."""
    units = raw.get("units")
    lacking = isinstance(units, list) and any(
        isinstance(u, dict) and (u.get("shown_sha256") is None or u.get("prompt_sha256") is None) for u in units)
    return {**raw, "format_version": 2, "selection": raw.get("selection", "random"), "exact_answers": lacking}


CURRENT = 2
STEPS: dict[int, Callable[[JSONObject], JSONObject]] = {1: _shown_hashes_stated}
