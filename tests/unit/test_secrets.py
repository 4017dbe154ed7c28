"""Secrets (issue 11): an API key planted in the environment variable named by an
`openai_compat` model config is sent to the server, and appears nowhere else: not in
the store (raw bytes, WAL included), the run folder (reports, manifest, summary, trail,
Hydra's files and log), stdout/stderr, log records or exception texts; also when the
server echoes it back in a 401 error body."""

from __future__ import annotations

import json
import logging
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from biasaudit.compose import compose
from biasaudit.errors import BiasAuditError
from biasaudit.pipeline import prepare
from tests.conftest import isolation, run_dirs
from tests.helpers import GENERATE_SPEC as SPEC
from tests.helpers import write_spec

KEY_ENV = "BIASAUDIT_TEST_API_KEY"
REPO = Path(__file__).resolve().parents[2]



class FakeOpenAI(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible chat endpoint: one canned completion with top
    log-probs (enough for `generate` and the judges' one-letter `choice`), or, in mode
    `deny`, a 401 whose body echoes the Authorization header as some servers do."""

    mode = "ok"
    seen_auth: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        auth = self.headers.get("Authorization", "")
        type(self).seen_auth.append(auth)
        if type(self).mode == "deny":
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {auth}"}}).encode()
            self.send_response(401)
        else:
            body = json.dumps({"choices": [{
                "message": {"role": "assistant", "content": "Yes, they genuinely are."},
                "finish_reason": "stop",
                "logprobs": {"content": [{"token": "A", "logprob": -0.1, "top_logprobs": [
                    {"token": "A", "logprob": -0.1}, {"token": "D", "logprob": -2.5}]}]},
            }], "usage": {"completion_tokens": 5}}).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[FakeOpenAI]]]:
    handler = type("Handler", (FakeOpenAI,), {"mode": "ok", "seen_auth": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def planted() -> str:
    return f"sk-test-PLANTED-{secrets.token_hex(16)}"


def model_args(url: str) -> list[str]:
    return ["model=openai_compat", f"model.base_url={url}", f"model.api_key_env={KEY_ENV}", "model.max_retries=0",
            "model.concurrency=2"]


def run_cli(workdir: Path, args: list[str], key: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), KEY_ENV: key}
    # hydra.verbose: every logger at DEBUG into the run's cli.log, so the check covers them all
    return subprocess.run([sys.executable, "-m", "biasaudit.cli", "-v", "run", *args, "hydra.verbose=true"],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


def files_containing(root: Path, needle: str) -> list[str]:
    return [str(p) for p in sorted(root.rglob("*")) if p.is_file() and needle.encode() in p.read_bytes()]


def test_planted_key_is_sent_and_written_nowhere(workdir: Path, server, planted: str) -> None:  # type: ignore[no-untyped-def]
    url, handler = server
    spec = write_spec(workdir / "s.yaml", SPEC)
    done = run_cli(workdir, [f"spec={spec}", *model_args(url), *isolation(workdir)], planted)
    assert done.returncode == 0, done.stderr
    assert handler.seen_auth and set(handler.seen_auth) == {f"Bearer {planted}"}  # the key was really used
    [run] = run_dirs(workdir)
    assert (run / "cli.log").stat().st_size > 0 and (workdir / "cache.sqlite").is_file()
    assert json.loads((run / "manifest.json").read_text())["config"]["model"]["api_key_env"] == KEY_ENV
    assert files_containing(workdir, planted) == []
    assert planted not in done.stdout + done.stderr
    assert files_containing(workdir, planted[len("sk-test-"):]) == []  # not even in part


def test_key_echoed_by_a_401_is_scrubbed_before_it_is_stored(workdir: Path, server, planted: str) -> None:  # type: ignore[no-untyped-def]
    url, handler = server
    handler.mode = "deny"
    spec = write_spec(workdir / "s.yaml", SPEC)
    done = run_cli(workdir, [f"spec={spec}", *model_args(url), *isolation(workdir)], planted)
    assert done.returncode == 0, done.stderr  # failures are recorded and counted, not fatal
    assert handler.seen_auth and "4 requests, 0 from cache, 4 model calls, 4 failed" in done.stdout
    import sqlite3

    with sqlite3.connect(workdir / "cache.sqlite") as db:
        errors = [r[0] for r in db.execute("SELECT error FROM responses WHERE status = 'failed'")]
    # echoed, then scrubbed: by the backend itself (<secret>) or, failing that, by the store's guard
    assert errors and all(e.startswith("HTTP 401") and ("[REDACTED]" in e or "<secret>" in e) for e in errors)
    assert not [e for e in errors if planted in e]
    assert files_containing(workdir, planted) == []
    assert planted not in done.stdout + done.stderr


def test_in_process_logs_and_errors_never_carry_the_key(workdir: Path, server, planted: str, monkeypatch,
                                                         caplog, capsys) -> None:  # type: ignore[no-untyped-def]
    url, handler = server
    handler.mode = "deny"
    monkeypatch.setenv(KEY_ENV, planted)
    spec = write_spec(workdir / "s.yaml", SPEC)
    from biasaudit.backends import build_backend
    from biasaudit.engine import execute_requests
    from biasaudit.store import Store

    caplog.set_level(logging.DEBUG)
    prep = prepare(compose([f"spec={spec}", *model_args(url), *isolation(workdir)]))
    cfg = prep.composed.config
    backend = build_backend(cfg.model, cfg.runtime)
    assert planted not in repr(backend) and planted not in repr(vars(backend))
    logging.getLogger("biasaudit.test").warning("a header slipped into a message: Bearer %s", planted)
    store = Store(workdir / "cache.sqlite")
    results, stats = execute_requests(dict(list(prep.plan.requests.items())[:2]), store, lambda: backend,
                                      progress=False)
    store.close()
    assert stats.new_failures == 2 and all(("[REDACTED]" in (r.error or "") or "<secret>" in (r.error or ""))
                                           and planted not in (r.error or "") for r in results.values())
    texts = [r.getMessage() for r in caplog.records] + [r.exc_text or "" for r in caplog.records]
    for handler_ in logging.getLogger().handlers:  # what the handlers actually emit
        texts += [handler_.format(r) for r in caplog.records]
    assert any("[REDACTED]" in t for t in texts)
    assert not [t for t in texts if planted in t]
    out, err = capsys.readouterr()
    assert planted not in out + err

    # errors raised to the user: a key given where only a variable name belongs, and a
    # variable that is not set, never show a key's value
    monkeypatch.delenv(KEY_ENV)
    others = [a for a in model_args(url) if not a.startswith("model.api_key_env=")]
    for overrides in ([f"+model.api_key={planted}"], [f"model.api_key_env={planted}"], [f"model.api_key_env={KEY_ENV}"]):
        with pytest.raises(BiasAuditError) as ei:
            prep = prepare(compose([f"spec={spec}", *others, *overrides, *isolation(workdir)]))
            build_backend(prep.composed.config.model, prep.composed.config.runtime)
        assert planted not in str(ei.value) and planted not in repr(ei.value), ei.value
        assert any(w in str(ei.value) for w in ("unknown key 'api_key'", "must name an environment variable",
                                                 f"{KEY_ENV} is not set")), ei.value


def test_key_on_the_command_line_is_refused_and_not_echoed(workdir: Path, cli, planted: str) -> None:  # type: ignore[no-untyped-def]
    spec = write_spec(workdir / "s.yaml", SPEC)
    code, out, err = cli("run", f"spec={spec}", "model=openai_compat", f"+model.api_key={planted}", *isolation(workdir))
    assert code == 2 and "model.api_key: unknown key 'api_key'" in err and "api_key_env" in err
    assert planted not in out + err
    assert not any((workdir / "reports").iterdir()) and not (workdir / "cache.sqlite").exists()
