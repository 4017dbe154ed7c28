"""openai_compat over real HTTP against a server on 127.0.0.1 started by the test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from biasaudit.backends.openai_compat import OpenAICompatBackend, parse_retry_after
from biasaudit.plan import Request
from biasaudit.spec import ModelConfig, RuntimeConfig

OK_CHAT = {"choices": [{"message": {"content": "Yes, because."}, "finish_reason": "stop"}],
           "usage": {"completion_tokens": 3}}


class Server:
    def __init__(self) -> None:
        self.script: list[tuple[int, dict, object]] = []
        self.seen: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                status, headers, payload = server.script.pop(0) if server.script else (200, {}, OK_CHAT)
                if status == 0:  # simulate a hung server
                    time.sleep(float(payload))  # type: ignore[arg-type]
                    status, payload = 200, OK_CHAT
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def backend(server: Server, monkeypatch: pytest.MonkeyPatch, **kw: object) -> tuple[OpenAICompatBackend, list[float]]:
    monkeypatch.setenv("TEST_API_KEY", "sk-test-planted-secret")
    cfg = ModelConfig(backend="openai_compat", name="t", base_url=server.url, model="m",
                      api_key_env="TEST_API_KEY", **kw)  # type: ignore[arg-type]
    b = OpenAICompatBackend(cfg, RuntimeConfig(), backoff_base=0.01)
    waits: list[float] = []
    b.sleep = waits.append  # record back-off waits instead of sleeping
    return b, waits


REQ = Request(key="k1", kind="generate", messages=[{"role": "user", "content": "hi"}],
              params={"temperature": 0.0, "top_p": 1.0, "max_tokens": 5})


def answer(b: OpenAICompatBackend, req: Request = REQ):  # type: ignore[no-untyped-def]
    got = []
    b.execute([req], got.append)
    return got[0]


def test_429_with_retry_after_then_success(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    server.script = [(429, {"Retry-After": "2"}, {"error": "slow down"}), (200, {}, OK_CHAT)]
    b, waits = backend(server, monkeypatch)
    r = answer(b)
    assert r.status == "ok" and r.output["text"] == "Yes, because." and r.attempts == 2
    assert waits == [2.0]  # honoured Retry-After exactly
    assert server.seen[0]["auth"] == "Bearer sk-test-planted-secret"
    assert server.seen[0]["path"] == "/v1/chat/completions"


def test_500_is_retried_with_backoff(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    server.script = [(500, {}, {"error": "boom"}), (200, {}, OK_CHAT)]
    b, waits = backend(server, monkeypatch)
    r = answer(b)
    assert r.status == "ok" and r.attempts == 2 and len(waits) == 1 and 0 < waits[0] < 1


def test_persistent_500_fails_after_bounded_retries(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    server.script = [(500, {}, {"error": "boom"})] * 3
    b, waits = backend(server, monkeypatch, max_retries=2)
    r = answer(b)
    assert r.status == "failed" and "HTTP 500" in (r.error or "") and "3 attempts" in (r.error or "")
    assert len(server.seen) == 3 and len(waits) == 2
    assert "sk-test" not in (r.error or "")


def test_timeout_then_success(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    server.script = [(0, {}, 1.0), (200, {}, OK_CHAT)]
    b, waits = backend(server, monkeypatch, timeout=0.2)
    r = answer(b)
    assert r.status == "ok" and r.attempts == 2


def test_timeout_every_time_is_a_recorded_failure(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    server.script = [(0, {}, 0.6)] * 2
    b, _ = backend(server, monkeypatch, timeout=0.2, max_retries=1)
    r = answer(b)
    assert r.status == "failed" and "timeout" in (r.error or "")


def test_next_token_reads_top_logprobs(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = {"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": [
        {"token": "Yes", "logprob": -0.1, "top_logprobs": [{"token": "Yes", "logprob": -0.1}, {"token": "No", "logprob": -2.4}]}]}}]}
    server.script = [(200, {}, payload)]
    b, _ = backend(server, monkeypatch)
    req = Request(key="k2", kind="next_token", messages=[{"role": "user", "content": "?"}], params={"top_k": 2})
    r = answer(b, req)
    assert r.output == {"top": [["Yes", -0.1], ["No", -2.4]]}
    assert server.seen[0]["body"]["top_logprobs"] == 2 and server.seen[0]["body"]["logprobs"] is True


def test_missing_api_key_env_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from biasaudit.errors import BackendError

    monkeypatch.delenv("NOPE_KEY", raising=False)
    cfg = ModelConfig(backend="openai_compat", name="t", base_url="http://127.0.0.1:9/v1", api_key_env="NOPE_KEY")
    with pytest.raises(BackendError) as ei:
        OpenAICompatBackend(cfg, RuntimeConfig())
    assert "NOPE_KEY" in ei.value.one_line()


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("garbage") is None
    http_date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < (parse_retry_after(http_date) or 0) <= 31


def test_choice_from_top_logprobs(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = {"choices": [{"message": {"content": "B"}, "logprobs": {"content": [
        {"token": "B", "logprob": -0.2, "top_logprobs": [{"token": "B", "logprob": -0.2}, {"token": " A", "logprob": -1.9},
                                                           {"token": "x", "logprob": -3.0}]}]}}]}
    server.script = [(200, {}, payload)]
    b, _ = backend(server, monkeypatch)
    req = Request(key="c", kind="choice", messages=[{"role": "user", "content": "?"}], params={"choices": ["A", "B", "C"]})
    r = answer(b, req)
    import math

    pa, pb = math.exp(-1.9), math.exp(-0.2)
    assert r.output["choice"] == "B" and r.output["probs"]["C"] == 0.0
    assert r.output["probs"]["A"] == pytest.approx(pa / (pa + pb))
