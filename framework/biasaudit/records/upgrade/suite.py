"""A suite folder's summary.json (`records.suite.SuiteSummary`), version by version.

1. Without `format_version` (written before versions existed), or with `format_version: 1`.
2. Estimates may carry their typed `group` (factor, levels, reference; issue 40): an
   optional field, absent from format 1, whose estimates read as they were (no group)."""

from __future__ import annotations

from biasaudit.records.upgrade._steps import optional_group_added

CURRENT = 2
STEPS = {1: optional_group_added}
