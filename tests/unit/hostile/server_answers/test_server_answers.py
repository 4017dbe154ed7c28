"""Hostile model servers: what an OpenAI-compatible server (or whatever answers at its
address) can send back. A server's answer is untrusted: a key it echoes in any encoding
is scrubbed before anything is stored or printed, every attempt has a total deadline and
a size cap (decompression included), a redirect is never followed, and a malformed
answer is a failure recorded and counted, never a traceback and never dropped.

Gathered from issues 11 (secrets) and 15 (hardening II and its catalogue)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, isolation, run_dirs
from tests.helpers import GENERATE_SPEC, expected_exit, write_spec
from tests.support.fault_server import FaultServer, Raw, http_response
from tests.unit.hostile._cases import (  # noqa: F401  (the *_fixture names register fixtures)
    KEY_ENV,
    SECRET,
    assert_no_leak,
    chat_body,
    files_containing,
    model_args,
    planted_fixture,
    planted_key_fixture,
    run_cli,
    server_fixture,
)

_chat = chat_body


# -- a key echoed in any encoding is scrubbed everywhere (issue 15, class 3) ---------------------

def _echo_key(prompt: str, headers: dict[str, str]) -> Raw:
    key = headers.get("authorization", "").removeprefix("Bearer ")
    forms = [key, urllib.parse.quote(key, safe=""), base64.b64encode(key.encode()).decode(),
             base64.b64encode(f"user:{key}".encode()).decode(), key[:12], key.replace("/", "\\u002f")]
    text = "echo: " + " | ".join(forms)
    if "Do you agree" in prompt:  # the subject's answers: a 200 whose JSON escapes '/' as '\/'
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": text},
                                        "finish_reason": "stop"}]}).replace("/", "\\/")
        return Raw(http_response(200, body.encode(), {"Content-Type": "application/json"}))
    body = json.dumps({"error": {"message": text}}).replace("/", "\\/")  # the rest: a 401 echoing it
    return Raw(http_response(401, body.encode(), {"Content-Type": "application/json"}))


def test_a_key_echoed_in_any_encoding_is_written_nowhere(workdir: Path, planted: str) -> None:
    spec = write_spec(workdir / "g.yaml", GENERATE_SPEC)
    with FaultServer(responder=_echo_key) as server:
        env = {**os.environ, "PYTHONPATH": str(REPO), KEY_ENV: SECRET}
        done = subprocess.run(
            [sys.executable, "-m", "biasaudit.cli.app", "-v", "run", f"spec={spec}", "model=openai_compat",
             f"model.base_url={server.url}", f"model.api_key_env={KEY_ENV}", "model.max_retries=0",
             *isolation(workdir), "hydra.verbose=true"],
            cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
        assert {s["auth"] for s in server.seen} == {f"Bearer {SECRET}"}  # the key was really sent
    assert done.returncode == expected_exit(workdir), done.stderr  # 4 when most requests failed: could not measure
    [run] = run_dirs(workdir)
    trail = (run / "responses.jsonl").read_text()
    assert "echo: [REDACTED]" in trail and "HTTP 401" in trail  # the answers and errors are there, scrubbed
    assert (run / "cli.log").stat().st_size > 0
    assert_no_leak(workdir, done.stdout, done.stderr)


def test_key_echoed_by_a_401_is_scrubbed_before_it_is_stored(workdir: Path, server, planted_key: str) -> None:  # type: ignore[no-untyped-def]
    url, handler = server
    handler.mode = "deny"
    spec = write_spec(workdir / "s.yaml", GENERATE_SPEC)
    done = run_cli(workdir, [f"spec={spec}", *model_args(url), *isolation(workdir)], planted_key)
    # failures are recorded and counted, not fatal: a run that measured nothing exits 4
    assert done.returncode == expected_exit(workdir) == 4, done.stderr
    assert handler.seen_auth and "4 requests, 0 from cache, 4 model calls, 4 failed" in done.stdout

    with sqlite3.connect(workdir / "cache.sqlite") as db:
        errors = [r[0] for r in db.execute("SELECT error FROM responses WHERE status = 'failed'")]
    # echoed, then scrubbed: by the backend itself (<secret>) or, failing that, by the store's guard
    assert errors and all(e.startswith("HTTP 401") and ("[REDACTED]" in e or "<secret>" in e) for e in errors)
    assert not [e for e in errors if planted_key in e]
    assert files_containing(workdir, planted_key) == []
    assert planted_key not in done.stdout + done.stderr


# -- a total deadline per attempt, a size cap, decompression within it (issue 15, class 7) --------

def _http_run(workdir: Path, cli, responder, *extra: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    spec = write_spec(workdir / "g.yaml", GENERATE_SPEC)
    with FaultServer(responder=responder) as server:
        code, out, err = cli("run", f"spec={spec}", "model=openai_compat", f"model.base_url={server.url}",
                             f"model.api_key_env={KEY_ENV}", "model.max_retries=1", "model.backoff_s=0",
                             *extra, *isolation(workdir))
    assert code == expected_exit(workdir), err
    assert_no_leak(workdir, out, err)
    [run] = run_dirs(workdir)
    return json.loads((run / "summary.json").read_text())["execution"]


def test_a_dripping_server_meets_the_total_deadline(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    drip = Raw(http_response(200, _chat("x" * 400)), every=0.05, chunk=1)  # 1 byte each 50 ms: ~25 s in all
    t0 = time.monotonic()
    ex = _http_run(workdir, cli, lambda p, h: drip, "model.timeout=0.5")
    # every request failed as a timeout after 2 attempts (none could finish within 0.5 s)
    assert ex["failures_by_kind"].get("timeout") == ex["failures"] and ex["failures"] >= 4
    assert time.monotonic() - t0 < 60  # not 25 s per attempt: a generous bound, not a timing claim


@pytest.mark.parametrize("what", ["size", "gzip bomb", "deflate bomb", "brotli"])
def test_response_bodies_are_capped(workdir: Path, cli, planted: str, what: str) -> None:  # type: ignore[no-untyped-def]
    big = _chat("y" * 5000)
    if what == "size":
        raw = http_response(200, big, {"Content-Type": "application/json"})
    elif what == "gzip bomb":  # 50 MB of zeros in ~50 kB: never decompressed past the cap
        raw = http_response(200, gzip.compress(b"0" * 50_000_000, 9), {"Content-Encoding": "gzip"})
    elif what == "deflate bomb":
        import zlib

        raw = http_response(200, zlib.compress(b"0" * 50_000_000, 9), {"Content-Encoding": "deflate"})
    else:
        raw = http_response(200, b"\x0b\x02\x80", {"Content-Encoding": "br"})
    ex = _http_run(workdir, cli, lambda p, h: Raw(raw), "runtime.limits.http_response_bytes=4000")
    assert ex["failures_by_kind"] == {"malformed": ex["failures"]} and ex["failures"] >= 2


@pytest.mark.parametrize("usage", [{"total_tokens": 10**400}, {"completion_tokens": [1]}, [1, 2], "many",
                                   {"prompt_tokens": -5, "completion_tokens": 1}, {"total_tokens": True}])
def test_malformed_usage_is_a_counted_failure(workdir: Path, cli, planted: str, usage: object) -> None:  # type: ignore[no-untyped-def]
    raw = Raw(http_response(200, _chat(usage=usage), {"Content-Type": "application/json"}))
    ex = _http_run(workdir, cli, lambda p, h: raw)
    assert ex["failures_by_kind"] == {"malformed": ex["failures"]} and ex["failures"] == ex["requests"]


# -- the catalogue: hostile servers (issue 15) -----------------------------------------------------

def _redirect(target: FaultServer) -> Callable[[str, dict[str, str]], Raw]:
    return lambda p, h: Raw(http_response(307, b"", {"Location": f"{target.url}/chat/completions"}))


HTTP_CASES: dict[str, tuple[Callable[[str, dict[str, str]], Raw | None] | str, dict[str, int]]] = {
    "invalid JSON": (lambda p, h: Raw(http_response(200, b"{not json")), {"malformed": 1}),
    "HTML error page": (lambda p, h: Raw(http_response(200, b"<html>oops</html>", {"Content-Type": "text/html"})),
                        {"malformed": 1}),
    "JSON with the wrong content type": (lambda p, h: Raw(http_response(200, _chat(), {"Content-Type": "text/plain"})),
                                         {}),
    "JSON nested 100k deep": (lambda p, h: Raw(http_response(200, b"[" * 100_000 + b"]" * 100_000)),
                              {"malformed": 1}),
    "lone surrogate in content": (lambda p, h: Raw(http_response(200, _chat("\\ud800 ok").replace(b"\\\\", b"\\"))),
                                  {}),
    "huge header": (lambda p, h: Raw(http_response(200, _chat(), {"X-Big": "x" * 300_000})), {"connection": 1}),
    "chunked garbage": (lambda p, h: Raw(http_response(200, b"zz\r\nnot a chunk\r\n",
                                                       {"Transfer-Encoding": "chunked"}, content_length=False)),
                        {"connection": 1}),
    "endless chunked stream": (lambda p, h: Raw(http_response(200, b"".join(
        [b"8000\r\n" + b" " * 0x8000 + b"\r\n"] * 200), {"Transfer-Encoding": "chunked"}, content_length=False)),
        {"malformed": 1}),
    "body shorter than Content-Length": (lambda p, h: Raw(http_response(200, _chat())[:-10]), {"connection": 1}),
    "not HTTP at all": (lambda p, h: Raw(b"hello there\r\n\r\n"), {"connection": 1}),
    "204 no content": (lambda p, h: Raw(http_response(204, b"")), {"malformed": 1}),
    "base64 key in a header-like body": (lambda p, h: Raw(http_response(
        400, json.dumps({"error": base64.b64encode(h.get("authorization", "").encode()).decode()}).encode())),
        {"http_error": 1}),
    "redirect to another host": ("redirect", {"http_error": 1}),
}


@pytest.mark.parametrize("name", list(HTTP_CASES))
def test_hostile_server(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch, name: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, SECRET)
    responder, kinds = HTTP_CASES[name]
    spec = write_spec(workdir / "g.yaml", GENERATE_SPEC)
    with FaultServer() as other, FaultServer(responder=None if responder == "redirect" else responder) as server:
        if responder == "redirect":
            server.responder = _redirect(other)
        code, out, err = cli("run", f"spec={spec}", "model=openai_compat", f"model.base_url={server.url}",
                             f"model.api_key_env={KEY_ENV}", "model.max_retries=1", "model.backoff_s=0",
                             "model.timeout=10", "runtime.limits.http_response_bytes=1000000", *isolation(workdir))
        assert other.seen == []  # a redirect is never followed: the key goes to base_url only
    assert code == expected_exit(workdir) and "Traceback" not in err, err
    ex = json.loads((run_dirs(workdir)[0] / "summary.json").read_text())["execution"]
    if kinds:
        [(kind, _)] = kinds.items()
        assert ex["failures_by_kind"] == {kind: ex["failures"]} and ex["failures"] == ex["requests"], ex
    else:
        assert ex["failures"] == 0, ex
    assert_no_leak(workdir, out, err)
