"""compare.json (`biasaudit compare`, `records.compare.CompareResult`), version by version.

1. Without `format_version` (written before versions existed), or with `format_version: 1`:
   the same layout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CURRENT = 1
STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
