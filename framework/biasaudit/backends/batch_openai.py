"""OpenAI's Batch API for `openai_compat` models (and the OpenAI-compatible batch
endpoints other providers offer under the same routes).

The shapes, as OpenAI documents them and openai-python's types give them:
- `POST {base}/files` (multipart, `purpose=batch`) with a JSONL file, one line per request
  `{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}`;
- `POST {base}/batches` `{"input_file_id", "endpoint", "completion_window": "24h",
  "metadata": {"biasaudit_tag": tag}}` (metadata: up to 16 string pairs);
- `GET {base}/batches?limit=..&after=..`: `{"object": "list", "data": [batch, ...],
  "first_id", "last_id", "has_more"}`, newest first (each batch with its `metadata`):
  how a run killed between the submit and the ledger's commit finds its batch by tag;
- `GET {base}/batches/{id}`: `status` validating | in_progress | finalizing | completed |
  failed | expired | cancelling | cancelled, `request_counts` {total, completed, failed},
  `output_file_id`, `error_file_id`, `errors.data` (a failed validation);
- `GET {base}/files/{id}/content`: JSONL lines `{"id", "custom_id", "response":
  {"status_code", "request_id", "body"}, "error": {"code", "message"} | null}`; an
  expired batch's unfinished requests are in its error file with `batch_expired`.

The body of each line is the one the backend sends for a single call (`_body`), and an
answer is read by the same parser (`_parse`), so a batch answer is stored as the same
output a direct call gives, plus the batch id. Scoring texts (`sequence_logprob`) needs
probes of the server's conditioning first and is not batched (refused at validate).
Every body is read bounded: status and upload answers by `runtime.limits.http_response_bytes`,
result files line by line (each line by that limit, the file by `runtime.batch.max_result_bytes`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from biasaudit._util.trail import json_lines
from biasaudit.backends.batch_base import (
    BATCH_PROVIDERS,
    BatchFault,
    BatchResult,
    BatchState,
    result_lines,
)
from biasaudit.backends.http_limits import BodyTooLarge, bounded_body
from biasaudit.backends.openai_compat import OpenAICompatBackend, classify_status, parse_retry_after
from biasaudit.backends.openai_parse import OutputFault, reported_usage
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.spec import RuntimeConfig

log = logging.getLogger(__name__)

ENDPOINT = "/v1/chat/completions"
_ENDED = {"completed", "failed", "expired", "cancelled"}
# How often an upload or a submit the server turned away (429, 5xx) is tried again. A
# submit whose answer never came (a dropped connection) is not: the batch may exist.
_SEND_TRIES = 3
TAG_KEY = "biasaudit_tag"
"""The batch's `metadata` key holding the tag the ledger committed before the submit."""
_MAX_PAGES = 1000


class OpenAIBatches:
    name = "openai"
    max_requests = 50_000
    max_bytes = 200_000_000

    def __init__(self, backend: OpenAICompatBackend, runtime: RuntimeConfig) -> None:
        self.backend = backend
        self.runtime = runtime
        headers = {"Accept-Encoding": "gzip, deflate"}
        if backend._key is not None:
            headers["Authorization"] = f"Bearer {backend._key.reveal()}"
        self.client = httpx.Client(base_url=(backend.cfg.base_url or "").rstrip("/") + "/", headers=headers,
                                   timeout=httpx.Timeout(backend.cfg.timeout), follow_redirects=False)

    def __repr__(self) -> str:
        return f"OpenAIBatches(base_url={self.backend.cfg.base_url!r})"

    # -- requests -------------------------------------------------------------------
    def check(self, req: Request) -> str | None:
        if req.kind not in ("generate", "next_token", "choice"):
            return f"{req.kind} requests are not sent through a batch (the server's conditioning is probed first)"
        return None

    def line(self, custom_id: str, req: Request) -> JSONObject:
        _path, body, _ = self.backend._body(req)
        return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}

    def decode(self, req: Request, body: dict[str, Any]) -> JSONObject:
        out = self.backend._parse(req, body)
        usage = reported_usage(body)
        if usage is not None:
            out["usage"] = usage
        return out

    # -- HTTP ----------------------------------------------------------------------
    def _send(self, method: str, path: str, *, retry: bool, **kwargs: Any) -> dict[str, Any]:
        limit = self.runtime.limits.http_response_bytes
        for attempt in range(1, _SEND_TRIES + 1):
            try:
                with self.client.stream(method, path, **kwargs) as r:
                    raw = bounded_body(r.iter_raw(), r.headers.get("Content-Encoding", ""), limit)
            except httpx.HTTPError as exc:
                raise BatchFault(f"{method} {path}: {type(exc).__name__}") from None
            except BodyTooLarge as exc:
                raise BatchFault(f"{method} {path}: {exc}") from None
            text = self.backend._redact(raw.decode("utf-8", errors="replace"))
            if r.status_code >= 400:
                fault = classify_status(r.status_code, text, parse_retry_after(r.headers.get("Retry-After")))
                if retry and fault.retry and attempt < _SEND_TRIES:
                    time.sleep(min(fault.retry_after or 2.0 ** attempt, 60.0))
                    continue
                raise BatchFault(f"{method} {path}: {fault.reason[:200]}")
            if 300 <= r.status_code < 400:
                raise BatchFault(f"{method} {path}: HTTP {r.status_code} redirect not followed")
            try:
                data = json.loads(text)
            except (ValueError, RecursionError):
                raise BatchFault(f"{method} {path}: the answer is not JSON") from None
            if not isinstance(data, dict):
                raise BatchFault(f"{method} {path}: the answer is not a JSON object")
            return data
        raise AssertionError("unreachable")

    def submit(self, lines: Sequence[JSONObject], tag: str) -> str:
        payload = json_lines(lines).encode("utf-8")
        up = self._send("POST", "files", retry=True, data={"purpose": "batch"},
                        files={"file": ("biasaudit-batch.jsonl", payload, "application/jsonl")})
        file_id = up.get("id")
        if not isinstance(file_id, str) or not file_id:
            raise BatchFault("POST files: the answer has no file id")
        made = self._send("POST", "batches", retry=True, json={
            "input_file_id": file_id, "endpoint": ENDPOINT,
            "completion_window": self.runtime.batch.completion_window, "metadata": {TAG_KEY: tag}})
        batch_id = made.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise BatchFault("POST batches: the answer has no batch id")
        return batch_id

    def find(self, tags: set[str], since: float) -> dict[str, str] | None:
        # GET batches lists newest first, `limit` up to 100 a page, the next page `after`
        # the last id while `has_more`; a page whose oldest batch predates `since` (less a
        # day for clocks that disagree) ends the search: older ones cannot be ours.
        found: dict[str, str] = {}
        after: str | None = None
        for _ in range(_MAX_PAGES):
            page = self._send("GET", "batches", retry=True, params={"limit": 100, **({"after": after} if after else {})})
            rows = page.get("data")
            if not isinstance(rows, list):
                raise BatchFault("GET batches: the answer has no `data` list")
            oldest = None
            for b in rows:
                if not isinstance(b, dict):
                    continue
                meta = b.get("metadata")
                tag = meta.get(TAG_KEY) if isinstance(meta, dict) else None
                if tag in tags and isinstance(b.get("id"), str):
                    found[str(tag)] = b["id"]
                if isinstance(b.get("created_at"), (int, float)):
                    oldest = b["created_at"] if oldest is None else min(oldest, b["created_at"])
            last = page.get("last_id")
            if (found.keys() >= tags or not page.get("has_more") or not rows
                    or (oldest is not None and oldest < since - 86_400)):
                return found
            if not isinstance(last, str) or not last or last == after:
                raise BatchFault("GET batches: has_more without a usable last_id")
            after = last
        raise BatchFault(f"GET batches: more than {_MAX_PAGES} pages of batches since the run's intent")

    def _get(self, batch_id: str) -> dict[str, Any]:
        return self._send("GET", f"batches/{batch_id}", retry=False)

    def state(self, batch_id: str) -> BatchState:
        data = self._get(batch_id)
        status = str(data.get("status", ""))
        raw = data.get("request_counts")
        counts = {k: v for k, v in raw.items() if isinstance(v, int)} if isinstance(raw, dict) else {}
        errs = data.get("errors")
        rows = errs.get("data") if isinstance(errs, dict) else None
        note = "; ".join(f"{e.get('code', '')}: {e.get('message', '')}"[:160] for e in rows[:3]
                         if isinstance(e, dict)) if isinstance(rows, list) else ""
        return BatchState(ended=status in _ENDED, status=status, counts=counts, note=note)

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        data = self._get(batch_id)
        total = self.runtime.batch.max_result_bytes
        for key in ("output_file_id", "error_file_id"):
            file_id = data.get(key)
            if isinstance(file_id, str) and file_id:
                yield from self._file_results(file_id, total)

    def _file_results(self, file_id: str, total: int) -> Iterator[BatchResult]:
        yield from result_lines(self.client, f"files/{file_id}/content", what=f"GET files/{file_id}/content",
                                line_limit=self.runtime.limits.http_response_bytes, total=total, parse=_result)

    def close(self) -> None:
        self.client.close()


def _result(raw: bytes) -> BatchResult:
    """One line of an output or error file."""
    try:
        row = json.loads(raw)
    except (ValueError, RecursionError):
        return BatchResult(custom_id="", kind="malformed", reason="an unreadable line in the batch results")
    if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str):
        return BatchResult(custom_id="", kind="malformed", reason="a batch result line without custom_id")
    cid = row["custom_id"]
    resp = row.get("response") if isinstance(row.get("response"), dict) else None
    err = row.get("error") if isinstance(row.get("error"), dict) else None
    status = resp.get("status_code") if resp is not None else None
    body = resp.get("body") if resp is not None else None
    if status == 200 and isinstance(body, dict) and err is None:
        return BatchResult(custom_id=cid, body=body)
    if err is not None:
        code = str(err.get("code") or "")
        msg = " ".join(str(err.get("message") or "").split())[:160]
        kind = {"batch_expired": "batch_expired", "batch_cancelled": "batch_canceled"}.get(code, "http_error")
        return BatchResult(custom_id=cid, kind=kind, reason=f"batch error {code}: {msg}".strip())
    if isinstance(status, int):
        fault = classify_status(status, json.dumps(body)[:2000] if body is not None else "", None)
        return BatchResult(custom_id=cid, kind=fault.kind, reason=f"in the batch: {fault.reason}")
    return BatchResult(custom_id=cid, kind="malformed", reason="a batch result with neither response nor error")


def _make(backend: Any, runtime: RuntimeConfig) -> OpenAIBatches | None:
    inner = getattr(backend, "inner", backend)  # a managed engine wraps openai_compat: it has no batch API
    if not isinstance(inner, OpenAICompatBackend) or inner is not backend:
        return None
    return OpenAIBatches(inner, runtime)


BATCH_PROVIDERS.add("openai_compat", _make, kinds=frozenset({"generate", "next_token", "choice"}),
                    why_not="scoring a text (sequence_logprob) first probes how the server conditions it, "
                            "which a batch cannot")

__all__ = ["OpenAIBatches", "OutputFault"]
