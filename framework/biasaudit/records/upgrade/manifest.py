"""A run folder's manifest.json, version by version.

1. The layout of the golden files (tests/fixtures/format_v1), with or without a
   `format_version` key (main wrote `format_version: 1` after those files were made; the
   layout is the same)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CURRENT = 1
STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
