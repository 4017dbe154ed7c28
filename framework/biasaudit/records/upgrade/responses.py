"""responses.jsonl (a run's audit trail, one line per plan item), version by version.

1. No header: the files written before versions existed (tests/fixtures/format_v1).
2. A header record first (`_util.trail.header`) naming the kind and version; the item
   lines are as in version 1.

A trail's version is its file's, read from the header by the one trail reader; the steps
upgrade one line."""

from __future__ import annotations

from biasaudit.records.upgrade._steps import header_added

CURRENT = 2
STEPS = {1: header_added}
