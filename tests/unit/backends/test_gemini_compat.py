"""Gemini through its OpenAI-compatible endpoint with the `openai_compat` backend,
against a fake speaking the differences that matter (tests/support/gemini_server.py):
thinking tokens spent out of `max_tokens` (turned off with `reasoning_effort: none`),
thoughts billed as output but counted only in `total_tokens`, no log-probs on some
models (a 400; `probes: [generate]` refuses such specs at validate), and error bodies
sent as a JSON list (issue 43, section 3)."""

from __future__ import annotations

from typing import Any

import pytest

from biasaudit.backends import Response, check_probe_support
from biasaudit.backends.openai_compat import OpenAICompatBackend
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.spec import OpenAICompatConfig, RuntimeConfig
from tests.support.gemini_server import ANSWER, THOUGHTS, GeminiServer

KEY = "gemini-test-planted-key-31415"


def backend(server: GeminiServer, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> OpenAICompatBackend:
    monkeypatch.setenv("TEST_GEMINI_KEY", KEY)
    cfg = OpenAICompatConfig(backend="openai_compat", name="gemini", base_url=server.url, model="gemini-2.5-flash",
                             api_key_env="TEST_GEMINI_KEY", backoff_s=0.0, max_retries=1, **kw)
    return OpenAICompatBackend(cfg, RuntimeConfig())


def ask(b: OpenAICompatBackend, reqs: list[Request]) -> dict[str, Response]:
    got: list[Response] = []
    b.execute(reqs, got.append)
    return {r.key: r for r in got}


def gen(prompt: str, max_tokens: int) -> Request:
    return Request(key=prompt, kind="generate", messages=[{"role": "user", "content": prompt}],
                   params={"max_tokens": max_tokens})


def test_a_thinking_model_spends_a_short_budget_thinking_unless_reasoning_effort_is_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with GeminiServer() as server:
        thinking = ask(backend(server, monkeypatch), [gen("Invite?", 40)])["Invite?"]
        off = ask(backend(server, monkeypatch, reasoning_effort="none"), [gen("Invite?", 40)])["Invite?"]
    # 40 tokens, 60 of them wanted for thinking: nothing left for the answer, a counted failure
    assert thinking.status == "failed" and thinking.error_kind == "empty" and "finish_reason length" in (thinking.error or "")
    assert "reasoning_effort" not in server.seen[0]["body"] and server.seen[-1]["body"]["reasoning_effort"] == "none"
    assert off.ok and off.output is not None and off.output["text"] == ANSWER
    assert server.seen[-1]["auth"] == f"Bearer {KEY}"


def test_thoughts_counted_only_in_total_tokens_are_billed_as_output(monkeypatch: pytest.MonkeyPatch) -> None:
    with GeminiServer() as server:
        r = ask(backend(server, monkeypatch), [gen("Invite?", 200)])["Invite?"]
    assert r.ok and r.output is not None
    words = len(ANSWER.split())
    prompt = len("Invite?") // 4 or 1
    # total = prompt + completion + thoughts (mozilla-ai/any-llm#1290): output = total - prompt
    assert r.output["usage"] == {"input_tokens": prompt, "output_tokens": words + THOUGHTS}
    assert r.output["output_tokens"] == words  # the answer's own tokens, as the server counted them


def test_reasoning_effort_is_part_of_the_models_identity() -> None:
    from biasaudit.backends import backend_identity

    base = {"backend": "openai_compat", "name": "g", "base_url": "http://x/v1beta/openai/", "model": "m"}
    a = backend_identity(OpenAICompatConfig(**base))  # type: ignore[arg-type]
    b = backend_identity(OpenAICompatConfig(**base, reasoning_effort="none"))  # type: ignore[arg-type]
    assert a != b and b["reasoning_effort"] == "none"


def test_list_shaped_error_bodies_give_their_message(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(prompt: str, attempt: int) -> tuple[int, str] | None:
        return (503, "The model is overloaded. Please try again later.") if prompt == "busy" else None

    with GeminiServer(fail) as server:
        got = ask(backend(server, monkeypatch), [gen("busy", 200)])
    r = got["busy"]
    assert r.status == "failed" and r.error_kind == "server_error" and r.attempts == 2 and server.attempts["busy"] == 2
    assert r.error == "HTTP 503: The model is overloaded. Please try again later. (after 2 attempts)"


def test_no_logprobs_is_a_counted_failure_and_probes_generate_refuses_it_up_front(
        monkeypatch: pytest.MonkeyPatch) -> None:
    choice = Request(key="c", kind="choice", messages=[{"role": "user", "content": "A or B?"}],
                     params={"choices": ["A", "B"]})
    with GeminiServer() as server:
        r = ask(backend(server, monkeypatch), [choice])["c"]
    assert r.status == "failed" and r.error_kind == "http_error" and "Logprobs is not supported" in (r.error or "")
    cfg = OpenAICompatConfig(backend="openai_compat", name="gemini", base_url="http://x/v1beta/openai/", model="m",
                             probes=["generate"])
    with pytest.raises(BackendError, match="not fit for choice probes"):
        check_probe_support(cfg, "choice")
    check_probe_support(cfg, "generate")
