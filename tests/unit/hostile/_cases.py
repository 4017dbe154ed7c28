"""Shared helpers of the hostile-input catalogue (see README.md in this folder).

What every surface file uses: the planted secret and the check that no file, stdout or
stderr holds it in any encoding (`SECRET`, `KEY_ENV`, `assert_no_leak`), the one-line
failure checks (`clean_failure`, `error_lines`), small specs to start from (`BASE`,
`spec_with`, `bad_spec`, `spec_file`), the `Case` catalogue and its runner (`run_case`),
a fake OpenAI-compatible server (`FakeOpenAI`, the `server` fixture) and the helpers of
the kill-and-resume tests (`biasaudit`, `run_args`, the `reference` fixture).

A test module uses a fixture from here by importing it (`planted_fixture` registers `planted`)."""

from __future__ import annotations

import base64
import json
import os
import secrets
import sqlite3
import subprocess
import sys
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import biaxis_spec, comparable_summary, tp_spec, verdict_code, write_spec
from tests.unit.cli.test_cli_errors import assert_clean_failure

REPO = Path(__file__).resolve().parents[3]

# -- the planted secret ---------------------------------------------------------------------

SECRET = "sk-planted/9f+Qa=7Zx_c0ffee1234567"
KEY_ENV = "BIASAUDIT_HARDENING_KEY"


def leak_forms(secret: str = SECRET) -> list[str]:
    """The secret as a server or a bug might write it: raw, JSON-escaped, URL-encoded,
    base64 (both alphabets) and its first 8 characters."""
    b64 = base64.b64encode(secret.encode()).decode().rstrip("=")
    return [secret, json.dumps(secret)[1:-1].replace("/", "\\/"), urllib.parse.quote(secret, safe=""),
            urllib.parse.quote_plus(secret), b64[:-2], b64[:-2].replace("+", "-").replace("/", "_"),
            secret[:8], "".join(f"\\u{ord(c):04x}" for c in secret)]


def assert_no_leak(root: Path, *texts: str) -> None:
    forms = leak_forms()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes().decode("latin-1")
            assert not [f for f in forms if f in data], p
    for t in texts:
        assert not [f for f in forms if f in t], t[:300]


def error_lines(err: str) -> list[str]:
    """stderr without the stage messages ("· planning ...") a run prints as it goes."""
    return [ln for ln in err.strip().splitlines() if ln.strip() and not ln.startswith("· ")]


@pytest.fixture(name="planted")
def planted_fixture(monkeypatch: pytest.MonkeyPatch) -> str:
    """The planted secret, set in `KEY_ENV`."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def clean_failure(result: tuple[int, str, str], workdir: Path, *must: str) -> str:
    line = assert_clean_failure(result, workdir, *must)
    assert_no_leak(workdir, result[1], result[2])
    return line


# -- specs to start from ----------------------------------------------------------------------

BASE = """
audit: {name: t, method: token_probability}
stimuli: {source: pairs.csv, format: crows_pairs}
probe:
  kind: sequence_logprob
  inputs: {more: "{{ more }}", less: "{{ less }}"}
metrics:
  - {name: bias_score, mode: ar_full}
"""


def spec_with(workdir: Path, extra: str = "", *, replace: tuple[str, str] = ("", "")) -> Path:
    """BASE (with `replace` applied) plus `extra`, as s.yaml beside a 3-row pairs.csv."""
    tp_spec(workdir, 3)  # pairs.csv
    body = BASE.replace(*replace) if replace[0] else BASE
    return write_spec(workdir / "s.yaml", body + extra)


def bad_spec(workdir: Path, body: str, name: str = "bad.yaml") -> Path:
    """`body` as a spec file beside a 4-row pairs.csv."""
    tp_spec(workdir, 4)  # writes pairs.csv
    return write_spec(workdir / name, body)


def spec_file(workdir: Path, extra: str, head: str = "") -> Path:
    """`head` + BASE + `extra` as s.yaml beside a 3-row pairs.csv."""
    tp_spec(workdir, 3)
    return write_spec(workdir / "s.yaml", head + BASE + extra)


BadInput = Callable[[Path], tuple[list[str], list[str]]]
"""workdir -> (command-line arguments after `run`, strings the error line must contain)."""


def assert_one_line_nothing_changed(workdir: Path, cli, make: Callable[[Path], list[str]],  # type: ignore[no-untyped-def]
                                    must: list[str]) -> None:
    """`run` with the arguments `make` builds (a spec of its own or `spec_with`'s) ends in
    one line with a hint, exit code 2, no run folder, no journal or temporary file, no
    input file changed and no leak."""
    (workdir / "sub.yaml").mkdir()
    args = make(workdir)
    spec = [] if any(a.startswith("spec=") for a in args) else [f"spec={spec_with(workdir)}"]
    before = {p: p.stat().st_mtime_ns for p in workdir.rglob("*") if p.is_file()}
    code, out, err = cli("run", *spec, *args, "model=scripted", f"runtime.reports_dir={workdir / 'reports'}"
                         if not any("reports_dir" in a for a in args) else "runtime.progress=false",
                         *([f"runtime.cache={workdir / 'cache.sqlite'}"] if not any("cache" in a for a in args) else []))
    assert code == 2, err
    lines = error_lines(err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and "hint:" in lines[0], err
    for m in must:
        assert m in lines[0], (m, lines[0])
    assert not any((workdir / "reports").iterdir()), "a run folder was written"
    assert not list(workdir.rglob("*-journal")) and not list(workdir.rglob("*.tmp"))
    assert {p: p.stat().st_mtime_ns for p in before if p.exists()} == before  # no input file was changed
    assert_no_leak(workdir, out, err)


def write_file(w: Path, name: str, data: str | bytes) -> Path:
    p = w / name
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data)
    return p


def symlink_loop(w: Path) -> Path:
    (w / "loop.yaml").symlink_to(w / "loop.yaml")
    return w / "loop.yaml"


# -- the Case catalogue -------------------------------------------------------------------------

@dataclass
class Case:
    cls: str
    build: Callable[[Path], list[str]]
    """workdir -> arguments after the command (spec, overrides)."""
    must: list[str] = field(default_factory=list)
    """Strings the error line must hold; empty: the command must succeed."""
    command: str = "validate"


def case_spec(w: Path, extra: str = "", old: str = "", new: str = "") -> str:
    """`spec=<file>`: BASE (with `old` replaced by `new`) plus `extra`, beside pairs.csv."""
    tp_spec(w, 3)
    body = BASE.replace(old, new) if old else BASE
    return f"spec={write_spec(w / 's.yaml', body + extra)}"


def with_args(*args: str) -> Callable[[Path], list[str]]:
    """The catalogue's spec and these overrides."""
    return lambda w: [case_spec(w), *args]


def run_case(case: Case, workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A catalogue case ends with exit code 0 or 2, never a traceback; an error is one line
    with a hint; nothing holds the planted secret; a refused input leaves no run folder."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    args = case.build(workdir)
    extra = [] if any(a.startswith(("runtime.cache=", "runtime.reports_dir=")) for a in args) else isolation(workdir)
    if case.command not in ("run", "plan -m"):
        extra = []
    code, out, err = cli(*case.command.split(), *args, *extra)
    assert "Traceback" not in err, err
    if case.must:
        lines = error_lines(err)
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "hint:" in lines[0], err
        for m in case.must:
            assert m in lines[0], (m, lines[0])
        assert not (workdir / "reports").exists() or not any((workdir / "reports").iterdir()), "a run folder"
    else:
        assert code == 0, err
    assert_no_leak(workdir, out, err)


def chat_body(content: str = "Yes, because.", usage: object = None) -> bytes:
    """An OpenAI chat completion's JSON body."""
    body: dict[str, object] = {"choices": [{"message": {"role": "assistant", "content": content},
                                            "finish_reason": "stop"}]}
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


# -- a fake OpenAI-compatible server (test_secrets, server answers) -------------------------------

SECRETS_KEY_ENV = "BIASAUDIT_TEST_API_KEY"


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


@pytest.fixture(name="server")
def server_fixture() -> Iterator[tuple[str, type[FakeOpenAI]]]:
    """A `FakeOpenAI` server: (its /v1 URL, its handler class)."""
    handler = type("Handler", (FakeOpenAI,), {"mode": "ok", "seen_auth": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(name="planted_key")
def planted_key_fixture() -> str:
    """A fresh key for each test (test_secrets' `planted`)."""
    return f"sk-test-PLANTED-{secrets.token_hex(16)}"


def model_args(url: str) -> list[str]:
    return ["model=openai_compat", f"model.base_url={url}", f"model.api_key_env={SECRETS_KEY_ENV}",
            "model.max_retries=0", "model.concurrency=2"]


def run_cli(workdir: Path, args: list[str], key: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), SECRETS_KEY_ENV: key}
    # hydra.verbose: every logger at DEBUG into the run's cli.log, so the check covers them all
    return subprocess.run([sys.executable, "-m", "biasaudit.cli.app", "-v", "run", *args, "hydra.verbose=true"],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


def files_containing(root: Path, needle: str) -> list[str]:
    return [str(p) for p in sorted(root.rglob("*")) if p.is_file() and needle.encode() in p.read_bytes()]


# -- killed runs (signals; test_crash_safety) ---------------------------------------------------

ENV = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
TOTAL_CALLS = 59  # 24 subject calls + 35 judge and parser-fallback calls (checked below)
SUBJECT_CALLS = 24


def biasaudit(args: list[str], cwd: Path, *, kill_at: tuple[str, int] | None = None) -> subprocess.CompletedProcess[str]:
    """`biasaudit <args>` in a fresh process, optionally killed at a named point (tests/killpoints.py)."""
    head = ["-m", "tests.killpoints", kill_at[0], str(kill_at[1])] if kill_at else ["-m", "biasaudit.cli.app"]
    return subprocess.run([sys.executable, *head, *args], cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=600)


def run_args(workdir: Path, log: Path, *extra: str) -> list[str]:
    assert log == workdir / "calls.log"  # where the configs' relative calls_log points (cwd = workdir)
    spec, operator = biaxis_spec(workdir, log_calls=True)
    return ["run", f"spec={spec}", *operator, *isolation(workdir), *extra]


def logged_calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def statuses(workdir: Path) -> list[str]:
    with sqlite3.connect(workdir / "cache.sqlite") as db:
        return [r[0] for r in db.execute("SELECT status FROM runs ORDER BY started")]


@pytest.fixture(scope="module", name="reference")
def reference_fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    """Summary (volatile keys masked) and call log of one uninterrupted run."""
    work = tmp_path_factory.mktemp("reference")
    (work / "reports").mkdir()
    log = work / "calls.log"
    done = biasaudit(run_args(work, log), work)
    assert done.returncode == verdict_code(run_dirs(work)[0]), done.stderr
    calls = logged_calls(log)
    assert len(calls) == TOTAL_CALLS and len(set(calls)) == TOTAL_CALLS
    return comparable_summary(run_dirs(work)[0] / "summary.json", resumed=True), sorted(calls)


def assert_resumes_exactly(workdir: Path, log: Path, reference: tuple[str, list[str]]) -> None:
    again = biasaudit(run_args(workdir, log), workdir)
    assert again.returncode == verdict_code(run_dirs(workdir)[-1]), again.stderr
    calls = logged_calls(log)
    dupes = [k for k, n in Counter(calls).items() if n > 1]
    assert dupes == [], f"{len(dupes)} model calls were made twice"
    assert sorted(calls) == reference[1]  # every call of an uninterrupted run, each once
    finished = [d for d in run_dirs(workdir) if d.name in again.stdout]
    assert len(finished) == 1
    assert comparable_summary(finished[0] / "summary.json", resumed=True) == reference[0]
