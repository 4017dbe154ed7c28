"""openai_compat over real HTTP against the fault-injecting server on 127.0.0.1: one test
per fault kind (answered after a bounded number of retries, or a failure stored with its
kind), Retry-After and backoff waits on a fake clock, adaptive concurrency, rate limits,
responses emitted as they complete, and the API key kept out of everything."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from biasaudit.backends import Response
from biasaudit.backends.openai_compat import OpenAICompatBackend, parse_retry_after
from biasaudit.engine import execute_requests
from biasaudit.plan import Request
from biasaudit.spec import OpenAICompatConfig, RuntimeConfig
from biasaudit.store import Store
from tests.support.fault_server import CLIENT_KIND, TRANSIENT_KINDS, Fault, FaultServer

SECRET = "sk-test-planted-secret-4242"


class FakeTime:
    """A clock that only moves when the backend sleeps: waits are recorded, not slept."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s
        await asyncio.sleep(0)


def scripted(table: dict[str, Fault]):  # type: ignore[no-untyped-def]
    return lambda prompt: table.get(prompt)


@pytest.fixture
def server() -> Iterator[FaultServer]:
    s = FaultServer(hang_s=1.6)
    yield s
    s.close()


def backend(server: FaultServer, monkeypatch: pytest.MonkeyPatch, fake: FakeTime | None = None,
            **kw: object) -> OpenAICompatBackend:
    monkeypatch.setenv("TEST_API_KEY", SECRET)
    settings: dict[str, object] = {"max_retries": 2, "backoff_s": 0.01, "timeout": 1.0, **kw}
    cfg = OpenAICompatConfig(backend="openai_compat", name="t", base_url=server.url, model="m",
                      api_key_env="TEST_API_KEY", **settings)  # type: ignore[arg-type]
    if fake is None:
        return OpenAICompatBackend(cfg, RuntimeConfig())
    return OpenAICompatBackend(cfg, RuntimeConfig(), clock=fake.clock, sleep=fake.sleep)


def chat(prompt: str, kind: str = "generate", **params: object) -> Request:
    return Request(key=f"{kind}:{prompt}", kind=kind, messages=[{"role": "user", "content": prompt}],
                   params={"max_tokens": 5, **params})


def answer_all(b: OpenAICompatBackend, reqs: list[Request]) -> dict[str, Response]:
    got: list[Response] = []
    b.execute(reqs, got.append)
    assert len(got) == len(reqs)
    return {r.key: r for r in got}


# -- one test per fault kind -----------------------------------------------------------------

@pytest.mark.parametrize("fault", TRANSIENT_KINDS)
def test_transient_fault_is_retried_then_answered_or_failed_with_its_kind(
        fault: str, server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.faults = scripted({"once": Fault(fault, times=1), "twice": Fault(fault, times=2),
                              "always": Fault(fault)})
    b = backend(server, monkeypatch, max_retries=2)
    got = answer_all(b, [chat("once"), chat("twice"), chat("always"), chat("fine")])
    for prompt, attempts in (("once", 2), ("twice", 3), ("fine", 1)):
        r = got[f"generate:{prompt}"]
        assert r.status == "ok" and r.output is not None and r.output["text"] == "Yes, because it is so."
        assert r.attempts == attempts and server.attempts[prompt] == attempts
    failed = got["generate:always"]
    assert failed.status == "failed" and failed.error_kind == CLIENT_KIND[fault]
    assert failed.attempts == 3 and server.attempts["always"] == 3  # 1 + max_retries, no more
    assert "after 3 attempts" in (failed.error or "")


@pytest.mark.parametrize("fault", ["empty", "content_filter", "unauthorized"])
def test_content_faults_and_4xx_fail_at_once(fault: str, server: FaultServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    server.faults = scripted({"p": Fault(fault, times=1)})  # would answer on a retry: none is made
    b = backend(server, monkeypatch)
    r = answer_all(b, [chat("p")])["generate:p"]
    assert r.status == "failed" and r.error_kind == CLIENT_KIND[fault] and r.attempts == 1
    assert server.attempts["p"] == 1


def test_bad_logprobs_in_chat_and_in_echo(server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.faults = scripted({"chat": Fault("bad_logprobs"), "the quick brown fox": Fault("bad_logprobs")})
    b = backend(server, monkeypatch, bos_token="<s>")
    echo_bad = Request(key="echo-bad", kind="sequence_logprob", text="the quick brown fox")
    echo_ok = Request(key="echo-ok", kind="sequence_logprob", text="a lazy dog sleeps")
    got = answer_all(b, [chat("chat", "next_token", top_k=3), chat("ok", "choice", choices=["A", "B", "C"]),
                         echo_bad, echo_ok])
    assert got["next_token:chat"].error_kind == "bad_logprobs" and got["next_token:chat"].attempts == 1
    assert got["echo-bad"].error_kind == "bad_logprobs" and "differ in length" in (got["echo-bad"].error or "")
    ok = got["echo-ok"].output
    assert ok is not None and ok["tokens"] == ["<s>", "a", "lazy", "dog", "sleeps"]
    # the BOS first (sent as text, read and hidden by the server), then each word's own
    # characters; the server's log-probs are -1 - (i % 3), the first word's (which the
    # echo leaves out) from its next-token distribution after the BOS
    assert ok["offsets"] == [[0, 0], [0, 1], [2, 6], [7, 10], [11, 17]]
    assert ok["logprobs"] == [None, -1.0, -2.0, -3.0, -1.0]
    scored = [x["body"] for x in server.seen if x["body"].get("echo")]
    assert all(body["max_tokens"] == 1 and body["prompt"].startswith("<s>") for body in scored[1:])
    pa, pb = math.exp(-0.2), math.exp(-1.9)  # the server's top log-probs for A and B; C absent
    probs = got["choice:ok"].output["probs"]  # type: ignore[index]
    assert probs["A"] == pytest.approx(pa / (pa + pb)) and probs["C"] == 0.0
    sent = {s["body"]["messages"][0]["content"]: s["body"] for s in server.seen if "messages" in s["body"]}
    assert sent["chat"]["top_logprobs"] == 3 and sent["ok"]["top_logprobs"] == 20 and sent["ok"]["logprobs"] is True


def test_model_refusal_is_an_answer_but_content_filter_is_a_failure() -> None:
    from biasaudit.backends.openai_parse import OutputFault, parse_chat

    refusal = {"choices": [{"message": {"content": None, "refusal": "I can't help with that."},
                            "finish_reason": "stop"}]}
    out = parse_chat(refusal)
    assert out["text"] == "I can't help with that." and out["refusal"] is True
    with pytest.raises(OutputFault) as ei:
        parse_chat({"choices": [{"message": {"content": "partial"}, "finish_reason": "content_filter"}]})
    assert ei.value.kind == "content_filter"
    with pytest.raises(OutputFault) as ei:
        parse_chat({"choices": [{"message": {"content": "   "}, "finish_reason": "stop"}]})
    assert ei.value.kind == "empty"
    with pytest.raises(OutputFault) as ei:
        parse_chat({"id": "x"})
    assert ei.value.kind == "malformed"


def test_output_tokens_come_from_usage_or_the_words_when_usage_gives_none() -> None:
    from biasaudit.backends.openai_parse import parse_chat

    def chat(usage: object) -> dict[str, object]:
        return {"choices": [{"message": {"content": "two words"}, "finish_reason": "stop"}], "usage": usage}

    assert parse_chat(chat({"completion_tokens": 7}))["output_tokens"] == 7
    # a server that sends null (or no count) falls back to the words, never None
    assert parse_chat(chat({"completion_tokens": None, "prompt_tokens": 3}))["output_tokens"] == 2
    assert parse_chat(chat({}))["output_tokens"] == 2
    assert parse_chat(chat(None))["output_tokens"] == 2


# -- waits: Retry-After, backoff, cap ----------------------------------------------------

def test_retry_after_is_honoured_exactly_and_pauses_the_host(server: FaultServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    server.retry_after = "2"
    server.faults = scripted({"p": Fault("rate_limit_retry_after", times=1)})
    fake = FakeTime()
    b = backend(server, monkeypatch, fake)
    r = answer_all(b, [chat("p")])["generate:p"]
    assert r.status == "ok" and r.attempts == 2
    assert fake.sleeps == [2.0]             # its own wait; the host pause has passed by then
    assert b.limiter.pause_until == 2.0     # and every other request waited for it too


def test_backoff_doubles_without_retry_after_and_is_capped(server: FaultServer,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    server.faults = scripted({"p": Fault("http_503")})
    fake = FakeTime()
    b = backend(server, monkeypatch, fake, backoff_s=1.0, max_retries=3, max_backoff_s=3.0)
    r = answer_all(b, [chat("p")])["generate:p"]
    assert r.status == "failed" and r.attempts == 4 and r.error_kind == "server_error"
    assert len(fake.sleeps) == 3
    assert 1.0 <= fake.sleeps[0] <= 1.25 and 2.0 <= fake.sleeps[1] <= 2.5 and fake.sleeps[2] == 3.0  # 4 -> cap

    server.retry_after = "100"
    server.faults = scripted({"q": Fault("rate_limit_retry_after", times=1)})
    fake2 = FakeTime()
    b2 = backend(server, monkeypatch, fake2, max_backoff_s=0.5)
    assert answer_all(b2, [chat("q")])["generate:q"].status == "ok"
    assert fake2.sleeps == [0.5]            # Retry-After capped at max_backoff_s


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("garbage") is None
    http_date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < (parse_retry_after(http_date) or 0) <= 31


# -- adaptive concurrency and rate limits through the backend -----------------------------------

def test_one_overload_halves_the_limit_once_then_it_grows_back(server: FaultServer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = [f"p{i}" for i in range(8)]
    server.faults = scripted({p: Fault("rate_limit", times=1) for p in prompts})
    b = backend(server, monkeypatch, concurrency=8, min_concurrency=1)
    got = answer_all(b, [chat(p) for p in prompts])
    assert all(r.status == "ok" and r.attempts == 2 for r in got.values())
    # all 8 first attempts were sent at limit 8 (epoch 0): their 429s halve it once, 8 -> 4;
    # then 8 successes: 4 of them complete a window (-> 5), the other 4 do not fill the next
    assert b.controller.limit == 5 and b.controller.epoch == 1


def test_requests_in_flight_never_exceed_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    with FaultServer(latency=0.05) as server:
        b = backend(server, monkeypatch, concurrency=3)
        got = answer_all(b, [chat(f"p{i}") for i in range(12)])
        assert all(r.status == "ok" for r in got.values())
        assert 1 < server.max_in_flight <= 3


def test_request_rate_limit_paces_sends(server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTime()
    b = backend(server, monkeypatch, fake, concurrency=5, requests_per_s=2.0)
    answer_all(b, [chat(f"p{i}") for i in range(5)])
    # a burst of 2 (one second's worth), then one every 0.5 s: the last goes at t = 1.5
    assert fake.now == pytest.approx(1.5) and sum(fake.sleeps) == pytest.approx(1.5)


def test_token_rate_limit_uses_usage_to_correct_the_estimate(server: FaultServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTime()
    b = backend(server, monkeypatch, fake, concurrency=1, tokens_per_min=600.0)  # 10 tokens/s, bucket 10
    prompts = ["x" * 40, "y" * 40]  # estimate 40/4 + max_tokens 10 = 20; usage says 10 + 5 words = 15
    answer_all(b, [chat(p, max_tokens=10) for p in prompts])
    # t=0: first takes 20 (level 10 -> -10), usage refunds 5 (-5); second needs 10: waits 1.5 s,
    # takes 20 (-25); at t=1.5, 15 came back (-10), usage refunds 5 -> -5
    assert fake.sleeps == [pytest.approx(1.5)]
    assert b.limiter.tokens is not None and b.limiter.tokens.level == pytest.approx(-5.0)


# -- results as they complete; calls from inside an event loop ----------------------------------

def test_responses_are_committed_as_they_complete(server: FaultServer, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    release = threading.Event()
    server.holds = {"slow": release}
    reqs = {r.key: r for r in (chat("slow"), chat("fast1"), chat("fast2"))}
    db = tmp_path / "c.sqlite"
    store = Store(db)
    committed_before_slow: list[set[str]] = []
    b = backend(server, monkeypatch, concurrency=3, timeout=30)
    real_put, real_together = store.put, store.together

    def check() -> None:
        with sqlite3.connect(db) as other:  # a second connection sees only committed rows
            rows = {k for (k,) in other.execute("SELECT key FROM responses")}
        if {"generate:fast1", "generate:fast2"} <= rows:
            committed_before_slow.append(rows)
            release.set()  # only now may the slow request finish

    def put(req: Request, resp: Response, **kw: str | None) -> None:
        real_put(req, resp, **kw)
        # answers the loop had queued together are committed when their group ends
        if req.key != "generate:slow" and not store.db.in_transaction and not release.is_set():
            check()

    @contextlib.contextmanager
    def together() -> Iterator[None]:
        with real_together():
            yield
        if not release.is_set():
            check()

    store.put = put  # type: ignore[method-assign]
    store.together = together  # type: ignore[method-assign]
    results, stats = execute_requests(reqs, store, lambda: b, progress=False)
    store.close()
    assert committed_before_slow == [{"generate:fast1", "generate:fast2"}]
    assert server.released == {"slow": True}  # released by the commits, while it was in flight
    assert stats.calls == 3 and results["generate:slow"].status == "ok" and results["generate:slow"].attempts == 1


def test_execute_inside_a_running_event_loop_emits_on_the_callers_thread(
        server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    b = backend(server, monkeypatch)
    threads: list[int] = []

    async def notebook_cell() -> None:
        b.execute([chat("a"), chat("b")], lambda r: threads.append(threading.get_ident()))

    asyncio.run(notebook_cell())
    assert threads == [threading.get_ident()] * 2


# -- the API key ------------------------------------------------------------------------------

def test_api_key_is_sent_but_never_stored_logged_or_shown(server: FaultServer, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server.faults = scripted({"denied": Fault("unauthorized"), "boom": Fault("http_500")})
    b = backend(server, monkeypatch)
    reqs = {r.key: r for r in (chat("ok"), chat("denied"), chat("boom"))}
    store = Store(tmp_path / "c.sqlite")
    results, _ = execute_requests(reqs, store, lambda: b, progress=False)
    store.close()
    assert server.seen[0]["auth"] == f"Bearer {SECRET}"  # it is sent
    assert "[REDACTED]" in (results["generate:denied"].error or "")  # the server echoed it: redacted
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    for text in (stored.decode("latin-1"), caplog.text, repr(b), repr(vars(b)),
                 *(r.model_dump_json() for r in results.values())):
        assert SECRET not in text


def test_missing_api_key_warns_and_a_401_names_the_variable(server: FaultServer, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """A keyless local server needs no key: an unset variable only warns. A server that
    wants a key answers 401, and the failure says which variable was not set."""
    monkeypatch.delenv("NOPE_KEY", raising=False)
    server.faults = scripted({"denied": Fault("unauthorized", times=99)})
    cfg = OpenAICompatConfig(backend="openai_compat", name="t", base_url=server.url, model="m", api_key_env="NOPE_KEY",
                      max_retries=0)
    with caplog.at_level("WARNING"):
        b = OpenAICompatBackend(cfg, RuntimeConfig())
    assert any("NOPE_KEY is not set" in r.getMessage() for r in caplog.records)
    got = answer_all(b, [chat("fine"), chat("denied")])
    assert got["generate:fine"].status == "ok" and all(x["auth"] is None for x in server.seen)
    assert "HTTP 401" in (got["generate:denied"].error or "")
    assert "NOPE_KEY is not set" in (got["generate:denied"].error or "")


def test_base_url_without_scheme_is_refused_before_any_file_is_written(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import isolation
    from tests.helpers import tp_spec

    code, _, err = cli("run", f"spec={tp_spec(workdir, 2)}", "model=openai_compat",
                       "model.base_url=localhost:8000/v1", *isolation(workdir))
    assert code == 2 and "model.base_url" in err and "http://" in err and "Traceback" not in err
    assert not (workdir / "cache.sqlite").exists() and not any((workdir / "reports").iterdir())


def test_refused_connection_is_a_connection_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = OpenAICompatConfig(backend="openai_compat", name="t", base_url=f"http://127.0.0.1:{port}/v1",
                      max_retries=1, backoff_s=0.0)
    got: list[Response] = []
    OpenAICompatBackend(cfg, RuntimeConfig()).execute([chat("p")], got.append)
    assert got[0].status == "failed" and got[0].error_kind == "connection" and got[0].attempts == 2


def test_min_concurrency_above_max_is_a_config_error() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="min_concurrency"):
        OpenAICompatConfig(backend="openai_compat", name="t", base_url="http://x/v1", concurrency=2, min_concurrency=3)
