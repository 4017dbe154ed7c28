"""Requests (one model call each), plan items, and the content hash that keys the cache."""

from __future__ import annotations

import hashlib
import json
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict


class Request(BaseModel):
    model_config = ConfigDict(frozen=True)
    key: str
    kind: str
    text: str | None = None
    """Raw text, for scoring probes (no chat template); the premise for `classify_nli`."""
    text_pair: str | None = None
    """The hypothesis, for `classify_nli`."""
    messages: list[dict[str, str]] | None = None
    """Chat messages, for chat probes."""
    params: dict[str, Any] = {}
    sample: int = 0


class PlanItem(BaseModel):
    """Where a request sits in the design; not part of its hash."""

    model_config = ConfigDict(frozen=True)
    cell: str
    stimulus: str
    slot: str
    variant: int
    sample: int
    key: str


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(
    identity: dict[str, Any],
    kind: str,
    text: str | None,
    messages: list[dict[str, str]] | None,
    params: dict[str, Any],
    sample: int,
    text_pair: str | None = None,
) -> str:
    """Hash of everything that determines the answer, and nothing that does not.

    Batch size, concurrency and timeouts are left out on purpose. The sample index is
    only meaningful for sampled decoding, so deterministic requests share one key.
    """
    payload = {
        "model": identity,
        "kind": kind,
        "text": text,
        "messages": messages,
        "params": params,
        "sample": sample,
    }
    if text_pair is not None:
        payload["text_pair"] = text_pair
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class Derived(NamedTuple):
    """A request a metric needs answered about the responses (e.g. does this claim
    follow from that response?), keyed by its content."""

    kind: str
    text: str
    text_pair: str | None = None
    route: str = ""
    """Which model answers, when not implied by the kind (a judge's name for `choice`)."""
