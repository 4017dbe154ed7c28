"""A local server speaking the differences of Gemini's OpenAI-compatible endpoint
(`https://generativelanguage.googleapis.com/v1beta/openai/`) that matter to biasaudit:

- a thinking model spends `THOUGHTS` tokens thinking before it answers, out of
  `max_tokens`, unless `reasoning_effort` is `none`: with a short answer budget the
  content comes back empty with `finish_reason: length` (docs: ai.google.dev/gemini-api/
  docs/openai, "Thinking"; reasoning_effort none / low / medium / high);
- `usage` counts those thoughts in `total_tokens` only (prompt + candidates + thoughts),
  not in `completion_tokens` (mozilla-ai/any-llm#1290 shows a raw response:
  prompt 20, candidates 198, thoughts 405, total 623);
- a model without log-probs answers `logprobs` with 400 INVALID_ARGUMENT;
- error bodies are a JSON list: [{"error": {"code", "message", "status"}}]
  (google-gemini/gemini-cli#12823 quotes one), 429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE.

`fail(prompt, attempt)` -> (status, message) makes a request fail; None answers it."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

THOUGHTS = 60
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
          503: "UNAVAILABLE"}
ANSWER = "Yes, invite them: the experience fits."


class GeminiServer:
    def __init__(self, fail: Callable[[str, int], tuple[int, str] | None] | None = None) -> None:
        self.fail = fail or (lambda prompt, attempt: None)
        self.seen: list[dict[str, Any]] = []
        self.attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, {"object": "list", "data": [
                    {"id": "models/gemini-2.5-flash", "object": "model", "owned_by": "google"}]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
                prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                with server._lock:
                    server.attempts[prompt] += 1
                    attempt = server.attempts[prompt]
                    server.seen.append({"path": self.path, "body": body, "auth": self.headers.get("authorization")})
                if not self.path.endswith("/v1beta/openai/chat/completions"):
                    return self._send(404, [{"error": {"code": 404, "message": f"no route {self.path}",
                                                       "status": "NOT_FOUND"}}])
                failed = server.fail(prompt, attempt)
                if failed is None and body.get("logprobs"):
                    failed = (400, "Logprobs is not supported for the current model.")
                if failed is not None:
                    status, message = failed
                    return self._send(status, [{"error": {"code": status, "message": message,
                                                          "status": STATUS.get(status, "UNKNOWN")}}])
                thinks = body.get("reasoning_effort") != "none"
                thoughts = THOUGHTS if thinks else 0
                budget = int(body.get("max_tokens") or 8192) - thoughts
                words = ANSWER.split()
                text = " ".join(words[:max(0, budget)])
                finish = "stop" if budget >= len(words) else "length"
                p = max(1, len(prompt) // 4)
                c = len(text.split())
                message: dict[str, Any] = {"role": "assistant", "content": text}
                self._send(200, {"id": "gem-1", "object": "chat.completion", "created": 0, "model": body.get("model"),
                                 "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                 "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c + thoughts}})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="gemini-server", daemon=True).start()
        self.root = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.url = f"{self.root}/v1beta/openai/"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> GeminiServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
