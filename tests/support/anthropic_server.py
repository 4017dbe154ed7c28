"""A local server speaking Anthropic's Messages API shapes, for the `anthropic` backend's
tests: POST /v1/messages answers {id, type: message, role, model, content: [{type: text,
text}], stop_reason, stop_sequence, usage: {input_tokens, output_tokens}}; errors are
{type: error, error: {type, message}} with their documented statuses (400
invalid_request_error, 401 authentication_error, 429 rate_limit_error with retry-after,
500 api_error, 529 overloaded_error). Shapes as in Anthropic's API reference
(docs.anthropic.com/en/api/messages, /en/api/errors) and the SDK's `types.Message`.

`respond(body, attempt)` decides each answer: None for the default message, a `Reply`
for a chosen one. Every request's body and headers are kept in `seen`."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


@dataclass
class Reply:
    status: int = 200
    text: str = "Yes, invite them: the experience fits."
    stop_reason: str = "end_turn"
    usage: dict[str, int] | None = field(default_factory=lambda: {"input_tokens": 100, "output_tokens": 20})
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "something went wrong"
    raw: bytes | None = None
    delay: float = 0.0
    """Seconds to wait before answering (a hung server)."""


def user_text(body: dict[str, Any]) -> str:
    """The last user turn's text (what identifies a request to the fake)."""
    turns = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = turns[-1]["content"] if turns else ""
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


class MessagesServer:
    def __init__(self, respond: Callable[[dict[str, Any], int], Reply | None] | None = None) -> None:
        self.respond = respond or (lambda body, attempt: None)
        self.seen: list[dict[str, Any]] = []
        self.attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                body = json.loads(raw or b"{}")
                with server._lock:
                    key = user_text(body)
                    server.attempts[key] += 1
                    attempt = server.attempts[key]
                    server.seen.append({"path": self.path, "body": body,
                                        "headers": {k.lower(): v for k, v in self.headers.items()}})
                reply = server.respond(body, attempt) or Reply()
                if reply.delay:
                    time.sleep(reply.delay)
                if self.path != "/v1/messages":
                    reply = Reply(status=404, message=f"no route {self.path}")
                if reply.raw is not None:
                    data = reply.raw
                elif reply.status == 200:
                    msg: dict[str, Any] = {
                        "id": f"msg_{len(server.seen):04d}", "type": "message", "role": "assistant",
                        "model": body.get("model"), "content": [{"type": "text", "text": reply.text}] if reply.text else [],
                        "stop_reason": reply.stop_reason,
                        "stop_sequence": (body.get("stop_sequences") or [None])[0] if reply.stop_reason == "stop_sequence" else None}
                    if reply.usage is not None:
                        msg["usage"] = reply.usage
                    data = json.dumps(msg).encode()
                else:
                    data = json.dumps({"type": "error", "error": {"type": ERROR_TYPES.get(reply.status, "api_error"),
                                                                  "message": reply.message}}).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", "req_fake")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (timed out) and closed the connection

        self._httpd = Quiet(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="messages-server", daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> MessagesServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
