"""Moved: the tests of issue 15 (hardening II) are in tests/unit/hostile/, one file per
attack surface (README.md there). This module only keeps the names that other test files
import from it; new code imports them from `tests.unit.hostile._cases`."""

from __future__ import annotations

from tests.unit.hostile._cases import (  # noqa: F401  (re-exported)
    KEY_ENV,
    SECRET,
    assert_no_leak,
    clean_failure,
    error_lines,
    leak_forms,
    spec_with,
)
