"""Model weights loaded once per process.

A suite runs several members against the same model, and variants of a model that differ
only in how they are asked (a system prompt, a chat template, generation settings) share
its weights: loading them again costs ~20 s each for nothing. Backends get their tokenizer
and model through `shared`, keyed by what decides the weights (path, file, revision,
dtype, device); the count of real loads is what a run records (`execution.model_loads`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_WEIGHTS: dict[str, Any] = {}
_LOCK = threading.Lock()
_loads = 0


def shared(kind: str, key: dict[str, Any], load: Callable[[], T]) -> T:
    """`load()` once per (kind, key) in this process; later calls get the same objects."""
    global _loads
    memo = json.dumps([kind, key], sort_keys=True, default=str)
    with _LOCK:
        if memo not in _WEIGHTS:
            _WEIGHTS[memo] = load()
            _loads += 1
        return _WEIGHTS[memo]  # type: ignore[no-any-return]


def loads() -> int:
    """Weight loads in this process so far (each distinct model counts once)."""
    return _loads


def forget() -> None:
    """Drop every shared model (`factory.unload_all` calls it)."""
    with _LOCK:
        _WEIGHTS.clear()
