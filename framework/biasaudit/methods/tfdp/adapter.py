"""The TFDP stimulus format (`stimuli.format: tfdp`)."""

from __future__ import annotations

from typing import Any

from biasaudit.data.adapters import Adapter
from biasaudit.registry import ADAPTERS


def _tfdp(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key in ("s", "s_prime"):
        if str(row[key]).count("<MASK>") != 1:
            raise ValueError(f"{key} must contain <MASK> exactly once: {row[key]!r}")
    out["task"] = str(row.get("task") or "parity").strip()
    if out["task"] not in ("parity", "factuality"):
        raise ValueError(f"task must be 'parity' or 'factuality', got {out['task']!r}")
    return out


# TFDP masked pairs: S and S' with one <MASK> each, their truths, and the task label
# (parity: 0 is ideal; factuality: S factual, S' false, positive is ideal).
ADAPTERS.add("tfdp", Adapter(reader="csv", required=("s", "s_prime", "w_orig", "w_prime_orig"), convert=_tfdp,
                             fields=("s", "s_prime", "w_orig", "w_prime_orig", "task")))
