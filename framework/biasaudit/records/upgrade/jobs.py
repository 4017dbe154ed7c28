"""The job ledger (`verdicts.gating.Ledger`, jobs.jsonl: one line per finished job of a
sweep), version by version.

1. No header.
2. A header record first (`_util.trail.header`), written when the ledger is made; the
   job lines are as in version 1."""

from __future__ import annotations

from biasaudit.records.upgrade._steps import header_added

CURRENT = 2
STEPS = {1: header_added}
