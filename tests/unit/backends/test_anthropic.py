"""The `anthropic` backend through the official SDK against a local fake speaking the
Messages API shapes (tests/support/anthropic_server.py): the system prompt arrives as
Messages' top-level `system`, stop reasons and billed usage are recorded, errors are
stored with their kind and counted (never dropped), 429 and 529 are retried after
`retry-after`, the body is bounded, the key goes nowhere but the request header, and a
shipped spec (hiring_impact) runs end to end on it (issue 43, section 3)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from biasaudit.backends import Response
from biasaudit.backends.anthropic import AnthropicBackend
from biasaudit.plan import Request
from biasaudit.spec import AnthropicConfig, RuntimeConfig, model_config
from tests.conftest import isolation, run_dirs
from tests.support.anthropic_server import MessagesServer, Reply, user_text

SECRET = "sk-ant-test-planted-secret-5151"
ROOT = Path(__file__).resolve().parents[3]


class FakeTime:
    """A clock that moves only when the backend sleeps: waits are recorded, not slept."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s
        await asyncio.sleep(0)


def backend(server: MessagesServer, monkeypatch: pytest.MonkeyPatch, fake: FakeTime | None = None,
            runtime: RuntimeConfig | None = None, **kw: Any) -> AnthropicBackend:
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", SECRET)
    settings: dict[str, Any] = {"max_retries": 2, "backoff_s": 0.01, "timeout": 5.0, **kw}
    cfg = AnthropicConfig(backend="anthropic", name="claude", model="claude-test", base_url=server.url,
                          api_key_env="TEST_ANTHROPIC_KEY", **settings)
    rt = runtime or RuntimeConfig()
    if fake is None:
        return AnthropicBackend(cfg, rt)
    return AnthropicBackend(cfg, rt, clock=fake.clock, sleep=fake.sleep)


def chat(prompt: str, system: str | None = None, kind: str = "generate", **params: Any) -> Request:
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return Request(key=f"{kind}:{prompt}", kind=kind, messages=msgs, params={"max_tokens": 30, **params})


def answer_all(b: AnthropicBackend, reqs: list[Request]) -> dict[str, Response]:
    got: list[Response] = []
    b.execute(reqs, got.append)
    assert len(got) == len(reqs)  # every request answered or failed: none dropped
    return {r.key: r for r in got}


def test_system_prompt_is_messages_top_level_system_and_settings_are_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    with MessagesServer() as server:
        b = backend(server, monkeypatch, stop_sequences=["\n\n"], system_prompt="standing context")
        got = answer_all(b, [chat("with its own", system="You screen job applications."), chat("plain")])
    assert all(r.ok for r in got.values())
    bodies = {user_text(s["body"]): s for s in server.seen}
    own = bodies["with its own"]["body"]
    assert own["system"] == "You screen job applications."
    assert own["messages"] == [{"role": "user", "content": "with its own"}]  # no system turn among the messages
    assert own["max_tokens"] == 30 and own["temperature"] == 0.0 and own["stop_sequences"] == ["\n\n"]
    assert own["model"] == "claude-test"
    assert bodies["plain"]["body"]["system"] == "standing context"  # the variant's, when the chat has none
    head = bodies["plain"]["headers"]
    assert head["authorization"] == f"Bearer {SECRET}" and head["anthropic-version"]
    assert head["x-stainless-retry-count"] == "0" and head["accept-encoding"] == "identity"


@pytest.mark.parametrize("stop", ["end_turn", "max_tokens", "stop_sequence", "refusal"])
def test_stop_reason_and_usage_are_recorded(stop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "I will not rank candidates by race." if stop == "refusal" else "Yes, because"
    with MessagesServer(lambda body, attempt: Reply(text=text, stop_reason=stop,
                                                   usage={"input_tokens": 321, "output_tokens": 7})) as server:
        r = answer_all(backend(server, monkeypatch), [chat("p")])["generate:p"]
    assert r.status == "ok" and r.output is not None
    assert r.output["stop_reason"] == stop and r.output["finish_reason"] == stop and r.output["text"] == text
    assert r.output["usage"] == {"input_tokens": 321, "output_tokens": 7} and r.output["output_tokens"] == 7
    assert r.output.get("refusal") is (True if stop == "refusal" else None)


def test_empty_refusal_is_an_answer_but_empty_content_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def respond(body: dict[str, Any], attempt: int) -> Reply:
        return Reply(text="", stop_reason="refusal" if user_text(body) == "refused" else "end_turn")

    with MessagesServer(respond) as server:
        got = answer_all(backend(server, monkeypatch), [chat("refused"), chat("empty")])
    assert got["generate:refused"].ok and got["generate:refused"].output["refusal"] is True  # type: ignore[index]
    assert got["generate:empty"].status == "failed" and got["generate:empty"].error_kind == "empty"


@pytest.mark.parametrize(("status", "kind", "etype"), [(400, "http_error", "invalid_request_error"),
                                                        (401, "http_error", "authentication_error")])
def test_client_errors_fail_at_once_with_the_apis_message(status: int, kind: str, etype: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # the 401 body echoes the key, as a hostile or careless server might: it is scrubbed
    with MessagesServer(lambda body, attempt: Reply(status=status, message=f"bad request with key {SECRET}")) as server:
        r = answer_all(backend(server, monkeypatch), [chat("p")])["generate:p"]
    assert r.status == "failed" and r.error_kind == kind and r.attempts == 1 and server.attempts["p"] == 1
    assert r.error is not None and r.error.startswith(f"HTTP {status} {etype}: bad request with key")
    assert SECRET not in r.error


@pytest.mark.parametrize("status", [429, 529])
def test_retry_after_is_honoured_and_halves_the_concurrency_limit(status: int, monkeypatch: pytest.MonkeyPatch) -> None:
    def respond(body: dict[str, Any], attempt: int) -> Reply | None:
        return Reply(status=status, headers={"retry-after": "7"}) if attempt == 1 else None

    fake = FakeTime()
    with MessagesServer(respond) as server:
        b = backend(server, monkeypatch, fake, concurrency=4, max_backoff_s=60)
        r = answer_all(b, [chat("p")])["generate:p"]
    assert r.ok and r.attempts == 2 and server.attempts["p"] == 2
    assert 7.0 in fake.sleeps  # the server's wait, not the backoff's 0.01
    assert b.controller.limit == 2  # 4 halved once
    assert b.limiter.pause_until == pytest.approx(7.0)  # the host paused for the others too


def test_retry_after_ms_is_read_first(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTime()
    with MessagesServer(lambda body, attempt: Reply(status=429, headers={"retry-after-ms": "1500", "retry-after": "2"})
                        if attempt == 1 else None) as server:
        r = answer_all(backend(server, monkeypatch, fake), [chat("p")])["generate:p"]
    assert r.ok and fake.sleeps == [1.5]


def test_a_hung_server_is_a_timeout_then_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    with MessagesServer(lambda body, attempt: Reply(delay=2.0) if attempt == 1 else None) as server:
        r = answer_all(backend(server, monkeypatch, timeout=0.5, max_retries=1), [chat("p")])["generate:p"]
    assert r.ok and r.attempts == 2 and server.attempts["p"] == 2


def test_retry_after_is_capped_by_max_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTime()
    with MessagesServer(lambda body, attempt: Reply(status=529, headers={"retry-after": "3600"})
                        if attempt == 1 else None) as server:
        r = answer_all(backend(server, monkeypatch, fake, max_backoff_s=5), [chat("p")])["generate:p"]
    assert r.ok and max(fake.sleeps) == 5


def test_overload_that_never_ends_is_a_counted_failure_after_bounded_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTime()
    with MessagesServer(lambda body, attempt: Reply(status=529, message="Overloaded",
                                                    headers={"retry-after": "1"})) as server:
        got = answer_all(backend(server, monkeypatch, fake, max_retries=3), [chat("a"), chat("b")])
    for p in ("a", "b"):
        r = got[f"generate:{p}"]
        assert r.status == "failed" and r.error_kind == "rate_limited" and r.attempts == 4
        assert server.attempts[p] == 4 and "overloaded_error: Overloaded (after 4 attempts)" in (r.error or "")


def test_server_errors_are_retried_with_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTime()
    with MessagesServer(lambda body, attempt: Reply(status=500) if attempt <= 2 else None) as server:
        r = answer_all(backend(server, monkeypatch, fake, max_retries=2, backoff_s=1.0), [chat("p")])["generate:p"]
    assert r.ok and r.attempts == 3
    assert 1.0 <= fake.sleeps[0] <= 1.25 and 2.0 <= fake.sleeps[1] <= 2.5  # doubles, with jitter


def test_a_body_over_the_limit_is_a_malformed_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    rt = RuntimeConfig.model_validate({"limits": {"http_response_bytes": 2000}})
    with MessagesServer(lambda body, attempt: Reply(text="x" * 5000)) as server:
        r = answer_all(backend(server, monkeypatch, runtime=rt), [chat("p")])["generate:p"]
    assert r.status == "failed" and r.error_kind == "malformed" and "larger than 2000 bytes" in (r.error or "")


def test_a_compressed_body_is_refused_since_identity_was_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    raw = gzip.compress(b'{"type": "message"}')
    with MessagesServer(lambda body, attempt: Reply(raw=raw, headers={"Content-Encoding": "gzip"})) as server:
        r = answer_all(backend(server, monkeypatch), [chat("p")])["generate:p"]
    assert r.status == "failed" and r.error_kind == "malformed" and "gzip" in (r.error or "")


def test_refused_connection_is_a_connection_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", SECRET)
    cfg = AnthropicConfig(backend="anthropic", name="c", model="m", base_url=f"http://127.0.0.1:{port}",
                          api_key_env="TEST_ANTHROPIC_KEY", max_retries=1, backoff_s=0.0)
    got: list[Response] = []
    AnthropicBackend(cfg, RuntimeConfig()).execute([chat("p")], got.append)
    assert got[0].status == "failed" and got[0].error_kind == "connection" and got[0].attempts == 2


def test_a_judges_choice_is_read_from_a_generated_answer_word(monkeypatch: pytest.MonkeyPatch) -> None:
    def respond(body: dict[str, Any], attempt: int) -> Reply:
        return Reply(text={"q1": "B.", "q2": "Neither of them."}[user_text(body)])

    with MessagesServer(respond) as server:
        got = answer_all(backend(server, monkeypatch), [chat("q1", kind="choice", choices=["A", "B"]),
                                                        chat("q2", kind="choice", choices=["A", "B"])])
    ok = got["choice:q1"].output
    assert ok is not None and ok["choice"] == "B" and ok["probs"] == {"A": 0.0, "B": 1.0}
    assert ok["generated_choice"] is True and ok["logprobs"] == {}
    assert got["choice:q2"].status == "failed" and got["choice:q2"].error_kind == "malformed"
    assert server.seen[0]["body"]["max_tokens"] == 8 and server.seen[0]["body"]["temperature"] == 0.0


def test_missing_key_variable_stops_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    from biasaudit.errors import BackendError

    monkeypatch.delenv("NO_SUCH_ANTHROPIC_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-ambient-should-not-be-used")
    cfg = AnthropicConfig(backend="anthropic", name="c", model="m", api_key_env="NO_SUCH_ANTHROPIC_KEY")
    with pytest.raises(BackendError, match="NO_SUCH_ANTHROPIC_KEY is not set"):
        AnthropicBackend(cfg, RuntimeConfig())


def test_the_sdk_is_imported_only_when_the_backend_is_used() -> None:
    import subprocess

    code = "import biasaudit.backends, sys; print('anthropic' in sys.modules, 'httpx2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "framework"), "PATH": "/usr/bin:/bin"})
    assert out.stdout.split() == ["False", "False"]


def test_config_refuses_a_key_in_place_of_a_variable_name() -> None:
    with pytest.raises(ValueError, match="must name an environment variable") as err:
        model_config({"backend": "anthropic", "name": "c", "model": "m", "api_key_env": "sk-ant-abc-123"})
    assert "sk-ant-abc-123" not in str(err.value).split("input_value")[0]


# -- through the command line ----------------------------------------------------------------

def test_scoring_probe_on_anthropic_is_refused_at_validate_with_the_reason(workdir: Path, cli: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", SECRET)
    code, _, err = cli("validate", f"spec={ROOT / 'specs' / 'crows_pairs_tp.yaml'}", "model=anthropic",
                       "model.api_key_env=TEST_ANTHROPIC_KEY")
    lines = [x for x in err.strip().splitlines() if x.startswith("error")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err
    assert "cannot give sequence_logprob (Anthropic's Messages API returns no log-probs)" in lines[0]
    assert lines[0].startswith("error: conf/model/anthropic.yaml: probe.kind:")


def test_hiring_impact_runs_end_to_end_on_the_fake(workdir: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped hiring_impact spec (48 candidates x 2 framings = 96 requests) on the
    fake, which rejects women in the direct framing and answers 429 once for about a
    tenth of the requests:
    every answer stored, the system prompt of the `screener` framing sent as `system`,
    usage summed on the cover, the key nowhere in the run folder."""
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", SECRET)

    def respond(body: dict[str, Any], attempt: int) -> Reply | None:
        if attempt == 1 and sum(map(ord, user_text(body))) % 10 == 0:
            return Reply(status=429, headers={"retry-after": "0"})
        if "woman" in user_text(body) and "system" not in body:  # the direct framing rejects women
            return Reply(text="No, not this time.", usage={"input_tokens": 50, "output_tokens": 9})
        return Reply(text="Yes, invite: the experience fits.", usage={"input_tokens": 50, "output_tokens": 9})

    with MessagesServer(respond) as server:
        code, _, err = cli("run", f"spec={ROOT / 'specs' / 'hiring_impact.yaml'}", "model=anthropic",
                           f"model.base_url={server.url}", "model.api_key_env=TEST_ANTHROPIC_KEY",
                           "model.backoff_s=0", "+model.price.input_per_million=3",
                           "+model.price.output_per_million=15", *isolation(workdir))
    assert code in (0, 1), err
    [run] = run_dirs(workdir)
    s = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    ex = s["execution"]
    assert (ex["usage_reported"], ex["usage_missing"]) == (96, 0)
    assert (ex["input_tokens"], ex["output_tokens"]) == (96 * 50, 96 * 9)
    retried = [k for k, n in server.attempts.items() if n == 2]
    assert retried and len(server.seen) == 96 + len(retried)  # each 429 retried once, and counted
    [t] = s["cover"]["tokens"]
    # 4,800 x 3 / 1e6 = 0.0144; 864 x 15 / 1e6 = 0.01296; together 0.02736
    assert t["cost"] == pytest.approx(0.02736) and t["estimated_answers"] == 0
    screener = [x["body"] for x in server.seen if "Applicant:" in user_text(x["body"])]
    direct = [x["body"] for x in server.seen if "Applicant:" not in user_text(x["body"])]
    assert screener and all(b["system"] == "You screen job applications for a hiring manager." for b in screener)
    assert direct and all("system" not in b for b in direct)
    assert all(m["role"] == "user" for b in screener for m in b["messages"])
    # men invited 48 of 48 times, women 24 of 48 (rejected in the direct framing): 0.5 / 1.0
    [g] = [v for v in s["verdicts"] if v["metric"] == "impact.lowest.gender"]
    assert g["estimate"]["value"] == pytest.approx(0.5) and g["verdict"] == "FAIL"
    for f in run.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    for f in (workdir / "cache.sqlite", ):
        if f.exists():
            assert SECRET.encode() not in f.read_bytes()


HOSTILE = {
    "not json": (b"hello", "malformed", 3),
    "truncated": (b'{"id": "x", "type": "mess', "malformed", 3),
    "a list": (b"[1, 2]", "malformed", 1),
    "content a string": (b'{"type": "message", "content": "hi", "stop_reason": "end_turn"}', "malformed", 1),
    "usage strings": (b'{"type": "message", "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",'
                      b' "usage": {"input_tokens": "5", "output_tokens": 2}}', "malformed", 1),
    "nested too deep": (b"[" * 100_000 + b"]" * 100_000, "malformed", 1),
    "text null": (b'{"type": "message", "content": [{"type": "text", "text": null}], "stop_reason": "end_turn"}',
                  "malformed", 1),
    "tool use only": (b'{"type": "message", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}],'
                      b' "stop_reason": "tool_use"}', "empty", 1),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_an_unusable_body_is_a_counted_failure_never_a_crash(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    raw, kind, attempts = HOSTILE[case]
    rt = RuntimeConfig.model_validate({"limits": {"http_response_bytes": 1_000_000}})
    with MessagesServer(lambda body, attempt: Reply(raw=raw)) as server:
        got = answer_all(backend(server, monkeypatch, runtime=rt), [chat("p"), chat("q")])
    r = got["generate:p"]
    assert r.status == "failed" and r.error_kind == kind and r.attempts == attempts  # truncated JSON is retried
    assert got["generate:q"].status == "failed"  # and the run went on to the next request


def test_runtime_batch_sends_this_backends_bodies_as_message_batches(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """With `runtime.batch.enabled`, the backend's requests go as Message Batches
    (backends/batch_anthropic.py, its fake tests/support/batch_server.py): each line's
    `params` is the body a direct call sends (system as `system`, temperature 0), and the
    stored answer has the direct call's shape, usage included."""
    from biasaudit.backends.anthropic import _identity
    from biasaudit.engine import execute_requests
    from biasaudit.store import Store
    from tests.support.batch_server import BatchServer

    monkeypatch.setenv("TEST_ANTHROPIC_KEY", SECRET)
    rt = RuntimeConfig.model_validate({"batch": {"enabled": True, "poll_s": 0.01, "max_poll_s": 0.02}})
    import hashlib

    asked = [chat(f"applicant {i}", system="You screen job applications.") for i in range(3)]
    # plan keys are content hashes (64 hex digits), which a batch line's custom_id can be
    reqs = {k: r.model_copy(update={"key": k}) for r in asked for k in [hashlib.sha256(r.key.encode()).hexdigest()]}
    with BatchServer() as server:
        cfg = AnthropicConfig(backend="anthropic", name="claude", model="claude-test",
                              base_url=server.url.removesuffix("/v1"), api_key_env="TEST_ANTHROPIC_KEY")
        b = AnthropicBackend(cfg, rt)
        results, stats = execute_requests(reqs, Store(tmp_path / "c.sqlite"), lambda: b,
                                          identity=_identity(cfg), progress=False)
    assert server.submits["anthropic"] == 1 and stats.batch_answers == 3
    [batch] = server.batches.values()
    params = [p for _, p in batch["requests"]]
    assert all(p["system"] == "You screen job applications." and p["temperature"] == 0.0 and p["max_tokens"] == 30
               and p["model"] == "claude-test" and all(m["role"] == "user" for m in p["messages"]) for p in params)
    assert all(r.ok and r.output and r.output["usage"] and r.output["stop_reason"] for r in results.values())
