"""Anthropic's Message Batches, spoken over HTTP with httpx (no SDK needed).

The shapes, as Anthropic documents them and anthropic-sdk-python's types give them:
- `POST {base}/messages/batches` `{"requests": [{"custom_id", "params": {Messages API
  body}}]}` -> a `message_batch` (`id`, `processing_status`, `request_counts`, `results_url`);
- `GET {base}/messages/batches/{id}`: `processing_status` in_progress | canceling | ended,
  `request_counts` {processing, succeeded, errored, canceled, expired};
- `GET results_url`: JSONL lines `{"custom_id", "result": {"type": "succeeded", "message"}
  | {"type": "errored", "error": {"type": "error", "error": {"type", "message"}}}
  | {"type": "canceled"} | {"type": "expired"}}`.
Headers: `x-api-key` (from the variable the model config names) and `anthropic-version`.
A `custom_id` is 1-64 characters of [a-zA-Z0-9_-]: a request key (64 hex digits) is one.

The Messages backend (backends/anthropic.py) attaches this provider to its kind with its
own request encoder and answer parser, so a batch answer is the same output its direct
call gives:

    attach("anthropic", lambda backend, runtime: AnthropicBatches(
        base_url=..., api_key=..., model=..., runtime=runtime, encode=backend.params, decode=backend.parse))

Without them the plain defaults below are used (generate only: the Messages API returns
no log-probs, so scoring probes are never batched here). The results URL must be on the
host of `base_url`: the key is never sent elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from biasaudit.backends.batch_base import (
    BATCH_PROVIDERS,
    BatchFault,
    BatchResult,
    BatchState,
    ProviderFactory,
    result_lines,
)
from biasaudit.backends.http_limits import BodyTooLarge, bounded_body
from biasaudit.backends.openai_parse import OutputFault
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.spec import RuntimeConfig

API_VERSION = "2023-06-01"
KINDS = frozenset({"generate"})
WHY_NOT = "Anthropic's Messages API returns no log-probs"


def attach(backend_kind: str, factory: ProviderFactory) -> None:
    """Declare this provider for a backend kind: `runtime.batch.enabled` is then accepted
    for its `generate` probes and refused at validate for the rest (no log-probs)."""
    BATCH_PROVIDERS.add(backend_kind, factory, kinds=KINDS, why_not=WHY_NOT)

# Anthropic's error types and the failure kinds they stand for (the rest: http_error).
_ERROR_KINDS = {"rate_limit_error": "rate_limited", "overloaded_error": "server_error", "api_error": "server_error",
                "timeout_error": "timeout"}


def default_params(model: str, req: Request) -> dict[str, Any]:
    """A Messages API body for a `generate` request: system messages as `system`, the
    rest as `messages`, the decoding parameters as given."""
    p = req.decoding()
    msgs = req.messages or []
    system = "\n\n".join(m.get("content", "") for m in msgs if m.get("role") == "system")
    body: dict[str, Any] = {"model": model, "max_tokens": p.max_tokens if p.max_tokens is not None else 128,
                            "messages": [{"role": m["role"], "content": m.get("content", "")}
                                         for m in msgs if m.get("role") != "system"],
                            "temperature": p.temperature if p.temperature is not None else 0.0}
    if system:
        body["system"] = system
    if p.top_p is not None and p.top_p < 1.0:
        body["top_p"] = p.top_p
    return body


def default_parse(req: Request, message: dict[str, Any]) -> JSONObject:
    """A `generate` answer from a Messages API message: its text blocks, stop reason and usage."""
    blocks = message.get("content")
    if not isinstance(blocks, list):
        raise OutputFault("malformed", "message has no `content` list")
    text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    if not isinstance(text, str) or not text.strip():
        raise OutputFault("empty", f"empty content (stop_reason {message.get('stop_reason')})")
    usage = message.get("usage")
    out: JSONObject = {"text": text, "finish_reason": message.get("stop_reason")}
    if isinstance(usage, dict):
        tin, tout = usage.get("input_tokens"), usage.get("output_tokens")
        if isinstance(tin, int) and isinstance(tout, int) and not isinstance(tin, bool) and not isinstance(tout, bool):
            out["usage"] = {"input_tokens": tin, "output_tokens": tout}
            out["output_tokens"] = tout
    if "output_tokens" not in out:
        out["output_tokens"] = len(text.split())
    return out


class AnthropicBatches:
    name = "anthropic"
    max_requests = 100_000
    max_bytes = 256_000_000

    def __init__(self, *, base_url: str, api_key: str | None, model: str, runtime: RuntimeConfig,
                 timeout: float = 60.0,
                 encode: Callable[[Request], dict[str, Any]] | None = None,
                 decode: Callable[[Request, dict[str, Any]], JSONObject] | None = None,
                 redact: Callable[[str], str] = lambda s: s) -> None:
        self.base = base_url.rstrip("/") + "/"
        self.runtime = runtime
        self.model = model
        self._encode = encode or (lambda req: default_params(model, req))
        self._decode = decode or default_parse
        self._redact = redact
        headers = {"anthropic-version": API_VERSION, "Accept-Encoding": "gzip, deflate"}
        if api_key:
            headers["x-api-key"] = api_key
        self.client = httpx.Client(base_url=self.base, headers=headers, timeout=httpx.Timeout(timeout),
                                   follow_redirects=False)

    def __repr__(self) -> str:
        return f"AnthropicBatches(base_url={self.base!r})"

    def check(self, req: Request) -> str | None:
        if req.kind != "generate":
            return f"{req.kind} needs log-probs, which Anthropic's Messages API does not give"
        return None

    def line(self, custom_id: str, req: Request) -> JSONObject:
        return {"custom_id": custom_id, "params": self._encode(req)}

    def decode(self, req: Request, body: dict[str, Any]) -> JSONObject:
        return self._decode(req, body)

    def _send(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        try:
            with self.client.stream(method, url, **kwargs) as r:
                raw = bounded_body(r.iter_raw(), r.headers.get("Content-Encoding", ""),
                                   self.runtime.limits.http_response_bytes)
        except httpx.HTTPError as exc:
            raise BatchFault(f"{method} {url}: {type(exc).__name__}") from None
        except BodyTooLarge as exc:
            raise BatchFault(f"{method} {url}: {exc}") from None
        text = self._redact(raw.decode("utf-8", errors="replace"))
        if r.status_code >= 300:
            raise BatchFault(f"{method} {url}: HTTP {r.status_code}: {text[:200]}")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise BatchFault(f"{method} {url}: the answer is not JSON") from None
        if not isinstance(data, dict):
            raise BatchFault(f"{method} {url}: the answer is not a JSON object")
        return data

    def submit(self, lines: Sequence[JSONObject], tag: str) -> str:
        made = self._send("POST", "messages/batches", json={"requests": list(lines)})
        batch_id = made.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise BatchFault("POST messages/batches: the answer has no batch id")
        return batch_id

    def find(self, tags: set[str], since: float) -> dict[str, str] | None:
        # A message batch keeps no metadata, and its custom_ids (our request keys) are
        # seen only in its results, once it has ended: a batch still running cannot be
        # told apart from another by listing (GET messages/batches gives ids, times and
        # counts). So no lookup: the engine says so and submits again.
        return None

    def state(self, batch_id: str) -> BatchState:
        data = self._send("GET", f"messages/batches/{batch_id}")
        status = str(data.get("processing_status", ""))
        raw = data.get("request_counts")
        counts = {k: v for k, v in raw.items() if isinstance(v, int)} if isinstance(raw, dict) else {}
        return BatchState(ended=status == "ended", status=status, counts=counts)

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        data = self._send("GET", f"messages/batches/{batch_id}")
        url = data.get("results_url")
        if not isinstance(url, str) or not url:
            raise BatchFault(f"batch {batch_id} has ended without a results_url")
        if urlsplit(url).netloc and urlsplit(url).netloc != urlsplit(self.base).netloc:
            raise BatchFault(f"the results of batch {batch_id} are on another host ({urlsplit(url).netloc[:80]}): "
                             "not fetched (the API key goes to model.base_url only)")
        yield from result_lines(self.client, url, what=f"GET results of {batch_id}",
                                line_limit=self.runtime.limits.http_response_bytes,
                                total=self.runtime.batch.max_result_bytes, parse=_result)

    def close(self) -> None:
        self.client.close()


def _result(raw: bytes) -> BatchResult:
    try:
        row = json.loads(raw)
    except (ValueError, RecursionError):
        return BatchResult(custom_id="", kind="malformed", reason="an unreadable line in the batch results")
    if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str) or not isinstance(row.get("result"), dict):
        return BatchResult(custom_id="", kind="malformed", reason="a batch result line without custom_id or result")
    cid, res = row["custom_id"], row["result"]
    kind = res.get("type")
    if kind == "succeeded" and isinstance(res.get("message"), dict):
        return BatchResult(custom_id=cid, body=res["message"])
    if kind == "expired":
        return BatchResult(custom_id=cid, kind="batch_expired", reason="the batch expired before this request ran")
    if kind == "canceled":
        return BatchResult(custom_id=cid, kind="batch_canceled", reason="the batch was canceled before this request ran")
    if kind == "errored":
        raw = res.get("error")
        outer: dict[str, Any] = raw if isinstance(raw, dict) else {}
        nested = outer.get("error")
        inner: dict[str, Any] = nested if isinstance(nested, dict) else outer
        etype = str(inner.get("type") or "")
        msg = " ".join(str(inner.get("message") or "").split())[:160]
        fk = _ERROR_KINDS.get(etype, "http_error")
        if fk == "http_error" and "content" in etype and "filter" in etype:
            fk = "content_filter"
        return BatchResult(custom_id=cid, kind=fk, reason=f"in the batch: {etype}: {msg}".strip())
    return BatchResult(custom_id=cid, kind="malformed", reason=f"a batch result of type {str(kind)[:40]!r}")


__all__ = ["AnthropicBatches", "attach", "default_params", "default_parse"]
