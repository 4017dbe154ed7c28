"""A local fake of two provider batch APIs, for tests: OpenAI's Batch API (files upload,
batch create, status, output and error files) and Anthropic's Message Batches (create,
retrieve, results), in the shapes the providers document (platform.openai.com/docs/api-reference/batch,
docs.anthropic.com/en/api/creating-message-batches; openai-python `types/batch*.py`,
anthropic-sdk-python `types/messages/message_batch*.py`).

A batch stays `in_progress` until the test sets `release` (so a test can kill the client
between submit and results); then it ends, each request's fate decided by `fate(prompt,
attempt)`: "ok", "server_error" (a 500 in the error file / an `api_error` result),
"bad_request" (a 400 / `invalid_request_error`), "empty" (OpenAI: a 200 whose message
is empty), or "expired" (not run: the OpenAI batch
is `expired` with `batch_expired` lines, the Anthropic result `expired`). `attempt` counts
the batches that held that prompt. The server counts submits, polls and every result
it served, so a test can check that nothing was submitted twice.

OpenAI's batch `metadata` (up to 16 string pairs, keys up to 64 characters, values up to
512) is kept and shown with the batch, and `GET /v1/batches?limit=&after=` lists the
batches newest first as `{"object": "list", "data", "first_id", "last_id", "has_more"}`
(limit 1-100, default 20; `list_page` caps it lower, to test the paging).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

Fate = Callable[[str, int], str]


def _prompt(body: dict[str, Any]) -> str:
    msgs = body.get("messages") or []
    return str(msgs[-1].get("content", "")) if msgs else ""


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client SIGKILLed mid-connection resets it: expected here, not worth a traceback


class BatchServer:
    def __init__(self, fate: Fate | None = None, *, release: bool = True) -> None:
        self.fate: Fate = fate or (lambda prompt, attempt: "ok")
        self.release = threading.Event()
        if release:
            self.release.set()
        self.lock = threading.Lock()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.submits: Counter[str] = Counter()  # "openai" / "anthropic" -> POST of a batch
        self.polls: Counter[str] = Counter()  # batch id -> status GETs
        self.served: Counter[str] = Counter()  # custom_id -> times its result was served
        self.attempts: Counter[str] = Counter()  # prompt -> batches that held it
        self.first_poll = threading.Event()
        self.list_page = 100  # the most batches one GET /v1/batches page holds
        self.lists: Counter[str] = Counter()  # "openai" -> GET /v1/batches pages served
        self._httpd = _Quiet(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> BatchServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- the fates of one batch, decided once when it ends ------------------------------
    def _end(self, b: dict[str, Any]) -> None:
        if b.get("outcome") is not None:
            return
        outcome = {}
        for cid, body in b["requests"]:
            prompt = _prompt(body)
            self.attempts[prompt] += 1
            outcome[cid] = (self.fate(prompt, self.attempts[prompt]), body)
        b["outcome"] = outcome

    # -- OpenAI -----------------------------------------------------------------------
    def _openai_status(self, bid: str) -> dict[str, Any]:
        b = self.batches[bid]
        n = len(b["requests"])
        base = {"id": bid, "object": "batch", "endpoint": b["endpoint"], "input_file_id": b["input_file_id"],
                "completion_window": "24h", "created_at": b["created_at"], "errors": None, "output_file_id": None,
                "error_file_id": None, "metadata": b["metadata"]}
        if not self.release.is_set():
            return {**base, "status": "in_progress", "request_counts": {"total": n, "completed": 0, "failed": 0}}
        self._end(b)
        out_lines, err_lines = [], []
        expired = False
        for i, (cid, (fate, body)) in enumerate(b["outcome"].items()):
            rid = f"batch_req_{bid}_{i}"
            if fate in ("ok", "empty"):
                said = f"Yes, because {_prompt(body)[:30]}" if fate == "ok" else ""
                completion = {"id": f"chatcmpl-{i}", "object": "chat.completion", "model": body.get("model"),
                              "choices": [{"index": 0, "message": {"role": "assistant", "content": said},
                                           "finish_reason": "stop", "logprobs": None}],
                              "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
                out_lines.append({"id": rid, "custom_id": cid, "error": None,
                                  "response": {"status_code": 200, "request_id": f"req_{i}", "body": completion}})
            elif fate == "expired":
                expired = True
                err_lines.append({"id": rid, "custom_id": cid, "response": None,
                                  "error": {"code": "batch_expired", "message": "This request could not be executed "
                                            "before the completion window expired."}})
            else:
                status = 500 if fate == "server_error" else 400
                err_lines.append({"id": rid, "custom_id": cid, "error": None, "response": {
                    "status_code": status, "request_id": f"req_{i}",
                    "body": {"error": {"message": f"fake {fate}", "type": "invalid_request_error" if status == 400
                                       else "server_error", "param": None, "code": None}}}})
        for lines, key in ((out_lines, "output_file_id"), (err_lines, "error_file_id")):
            if lines:
                fid = f"file-{key[:3]}-{bid}"
                self.files[fid] = "".join(json.dumps(x) + "\n" for x in lines).encode()
                base[key] = fid
        return {**base, "status": "expired" if expired else "completed",
                "request_counts": {"total": n, "completed": len(out_lines), "failed": len(err_lines)}}

    def _openai_list(self, q: dict[str, list[str]]) -> dict[str, Any]:
        self.lists["openai"] += 1
        limit = min(max(int(q.get("limit", ["20"])[0]), 1), 100, self.list_page)
        ids = [bid for bid in reversed(self.batches) if self.batches[bid]["kind"] == "openai"]  # newest first
        after = q.get("after", [None])[0]
        if after is not None:
            ids = ids[ids.index(after) + 1:] if after in ids else []
        page = ids[:limit]
        data = [self._openai_status(bid) for bid in page]
        return {"object": "list", "data": data, "first_id": page[0] if page else None,
                "last_id": page[-1] if page else None, "has_more": len(ids) > limit}

    # -- Anthropic -------------------------------------------------------------------
    def _anthropic_status(self, bid: str) -> dict[str, Any]:
        b = self.batches[bid]
        n = len(b["requests"])
        base = {"id": bid, "type": "message_batch", "created_at": "2026-01-01T00:00:00Z",
                "expires_at": "2026-01-02T00:00:00Z", "cancel_initiated_at": None, "archived_at": None}
        if not self.release.is_set():
            return {**base, "processing_status": "in_progress", "ended_at": None, "results_url": None,
                    "request_counts": {"processing": n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}}
        self._end(b)
        counts = Counter({"succeeded": 0, "errored": 0, "canceled": 0, "expired": 0})
        for fate, _ in b["outcome"].values():
            counts["succeeded" if fate == "ok" else "expired" if fate == "expired" else "errored"] += 1
        return {**base, "processing_status": "ended", "ended_at": "2026-01-01T01:00:00Z",
                "results_url": f"{self.url}/messages/batches/{bid}/results",
                "request_counts": {"processing": 0, **counts}}

    def _anthropic_results(self, bid: str) -> bytes:
        lines = []
        for cid, (fate, body) in self.batches[bid]["outcome"].items():
            if fate == "ok":
                msg = {"id": f"msg_{cid[:8]}", "type": "message", "role": "assistant", "model": body.get("model"),
                       "content": [{"type": "text", "text": f"Yes, because {_prompt(body)[:30]}"}],
                       "stop_reason": "end_turn", "stop_sequence": None,
                       "usage": {"input_tokens": 100, "output_tokens": 20}}
                result: dict[str, Any] = {"type": "succeeded", "message": msg}
            elif fate == "expired":
                result = {"type": "expired"}
            else:
                etype = "api_error" if fate == "server_error" else "invalid_request_error"
                result = {"type": "errored", "error": {"type": "error", "error": {"type": etype,
                                                                                 "message": f"fake {fate}"}}}
            lines.append({"custom_id": cid, "result": result})
            self.served[cid] += 1
        return "".join(json.dumps(x) + "\n" for x in lines).encode()

    # -- HTTP ------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, obj: Any) -> None:
                self._send(status, json.dumps(obj).encode())

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length", "0")))

            def do_POST(self) -> None:  # noqa: N802
                raw = self._body()
                with server.lock:
                    if self.path == "/v1/files":
                        msg = BytesParser(policy=HTTP).parsebytes(
                            f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + raw)
                        parts = {p.get_param("name", header="content-disposition"): p.get_payload(decode=True)
                                 for p in msg.iter_parts()}
                        if parts.get("purpose") != b"batch":
                            return self._json(400, {"error": {"message": "purpose must be batch"}})
                        fid = f"file-in-{len(server.files)}"
                        server.files[fid] = parts["file"]
                        return self._json(200, {"id": fid, "object": "file", "purpose": "batch",
                                                "bytes": len(parts["file"])})
                    if self.path == "/v1/batches":
                        req = json.loads(raw)
                        meta = req.get("metadata")
                        if meta is not None and not (isinstance(meta, dict) and len(meta) <= 16 and all(
                                isinstance(k, str) and isinstance(v, str) and len(k) <= 64 and len(v) <= 512
                                for k, v in meta.items())):
                            return self._json(400, {"error": {"message": "invalid metadata", "param": "metadata"}})
                        lines = [json.loads(x) for x in server.files[req["input_file_id"]].splitlines() if x.strip()]
                        assert all(x["method"] == "POST" and x["url"] == req["endpoint"] for x in lines)
                        server.submits["openai"] += 1
                        bid = f"batch_{len(server.batches)}"
                        server.batches[bid] = {"kind": "openai", "endpoint": req["endpoint"],
                                               "input_file_id": req["input_file_id"], "metadata": meta,
                                               "created_at": int(time.time()),
                                               "requests": [(x["custom_id"], x["body"]) for x in lines]}
                        return self._json(200, {**server._openai_status(bid), "status": "validating"})
                    if self.path == "/v1/messages/batches":
                        if self.headers.get("anthropic-version") != "2023-06-01":
                            return self._json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                               "message": "anthropic-version"}})
                        req = json.loads(raw)
                        server.submits["anthropic"] += 1
                        bid = f"msgbatch_{len(server.batches)}"
                        server.batches[bid] = {"kind": "anthropic",
                                               "requests": [(x["custom_id"], x["params"]) for x in req["requests"]]}
                        return self._json(200, server._anthropic_status(bid))
                return self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_GET(self) -> None:  # noqa: N802
                path, _, query = self.path.partition("?")
                parts = path.strip("/").split("/")
                with server.lock:
                    if parts == ["v1", "batches"]:
                        return self._json(200, server._openai_list(parse_qs(query)))
                    if parts[:2] == ["v1", "batches"] and len(parts) == 3 and parts[2] in server.batches:
                        server.polls[parts[2]] += 1
                        server.first_poll.set()
                        return self._json(200, server._openai_status(parts[2]))
                    if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
                        data = server.files.get(parts[2])
                        if data is None:
                            return self._json(404, {"error": {"message": "no such file"}})
                        for line in data.splitlines():
                            server.served[json.loads(line)["custom_id"]] += 1
                        return self._send(200, data, "application/jsonl")
                    if parts[:3] == ["v1", "messages", "batches"] and len(parts) >= 4 and parts[3] in server.batches:
                        if len(parts) == 5 and parts[4] == "results":
                            return self._send(200, server._anthropic_results(parts[3]), "application/binary")
                        server.polls[parts[3]] += 1
                        server.first_poll.set()
                        return self._json(200, server._anthropic_status(parts[3]))
                return self._json(404, {"error": {"message": f"no route {self.path}"}})

        return Handler
