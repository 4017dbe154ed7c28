"""Moved: the bad-input catalogue of issue 11 is in tests/unit/hostile/ (test_spec.py,
test_data_files.py, test_overrides.py; README.md there). This module only keeps the names
that other test files import from it; new code imports them from
`tests.unit.hostile._cases`."""

from __future__ import annotations

from tests.unit.hostile._cases import BASE  # noqa: F401  (re-exported)
from tests.unit.hostile._cases import bad_spec as spec_with  # noqa: F401  (re-exported)
