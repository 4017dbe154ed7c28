"""What a run over HTTP must do to give the in-process numbers, against local fake servers
(tests/support/fault_server.py; the real engine's parity is tests/integration/
test_http_parity.py): the standing system prompt reaches the server, a scored text is sent
after the model's BOS and scored from its first word, the generated token of an echo is
dropped, `ar_shared` refuses outputs without token ids, `top_k` caps are said, settings a
backend would ignore are refused at validate, and httpx stays quiet."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from biasaudit.backends import Response
from biasaudit.backends.http_scoring import Conditioning, align, text_tokens
from biasaudit.backends.openai_compat import OpenAICompatBackend
from biasaudit.backends.openai_parse import OutputFault
from biasaudit.plan import Request
from biasaudit.spec import OpenAICompatConfig, RuntimeConfig
from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec
from tests.support.fault_server import FIRST_WORD_LOGPROB, FaultServer


def _backend(server: FaultServer, **kw: object) -> OpenAICompatBackend:
    cfg = OpenAICompatConfig(backend="openai_compat", name="t", base_url=server.url, model="m", api_key_env=None,
                      max_retries=0, **kw)  # type: ignore[arg-type]
    return OpenAICompatBackend(cfg, RuntimeConfig())


def _run(b: OpenAICompatBackend, reqs: list[Request]) -> dict[str, Response]:
    got: list[Response] = []
    b.execute(reqs, got.append)
    return {r.key: r for r in got}


def _chat(key: str, kind: str = "generate", system: str | None = None, **params: object) -> Request:
    msgs = [{"role": "system", "content": system}] if system else []
    return Request(key=key, kind=kind, messages=[*msgs, {"role": "user", "content": key}], params=dict(params))


def test_system_prompt_reaches_chat_and_conditions_scoring() -> None:
    with FaultServer() as server:
        b = _backend(server, system_prompt="Be fair.", bos_token="<s>")
        got = _run(b, [_chat("q1"), _chat("q2", "next_token", top_k=3), _chat("q3", system="Own rules."),
                       Request(key="s", kind="sequence_logprob", text="the nurse was tired")])
    chats = {x["body"]["messages"][-1]["content"]: x["body"]["messages"] for x in server.seen if "messages" in x["body"]}
    assert chats["q1"][0] == {"role": "system", "content": "Be fair."}
    assert chats["q2"][0] == {"role": "system", "content": "Be fair."}
    assert [m["content"] for m in chats["q3"]] == ["Own rules.", "q3"]  # a request's own system message is kept
    scored = [x["body"]["prompt"] for x in server.seen if x["body"].get("echo") and "nurse" in x["body"]["prompt"]]
    assert scored == ["<s>Be fair.\nthe nurse was tired"]
    out = got["s"].output
    assert out is not None and got["s"].status == "ok", got["s"].error
    # only the text's own tokens are scored; the system prompt is context (its words are
    # echoed by the server but not in the output), so every text token has a log-prob
    assert out["tokens"] == ["<s>", "the", "nurse", "was", "tired"]
    assert out["offsets"] == [[0, 0], [0, 3], [4, 9], [10, 13], [14, 19]]
    assert None not in out["logprobs"][1:]
    assert "system prompt as context" in out["conditioning"]


def test_first_word_is_scored_from_the_distribution_after_bos_and_generated_token_dropped() -> None:
    with FaultServer() as server:
        got = _run(_backend(server, bos_token="<s>"),
                   [Request(key=t, kind="sequence_logprob", text=t) for t in ("a lazy dog", "one more time")])
    for text, r in got.items():
        assert r.status == "ok", r.error
        out = r.output
        assert out is not None
        assert out["tokens"] == ["<s>", *text.split()]  # not the "\n" the server generated
        # the echo leaves the first word without a log-prob; the next-token log-probs after
        # the BOS give it (the fake lists every first word at FIRST_WORD_LOGPROB)
        assert out["logprobs"] == [None, FIRST_WORD_LOGPROB, *[-1.0 - i % 3 for i in range(1, len(text.split()))]]
        assert out["token_ids"] == []  # the fake names no ids: ar_shared must refuse
    bodies = [x["body"] for x in server.seen if x["body"].get("prompt") is not None]
    assert all(bd["max_tokens"] == 1 for bd in bodies)  # never 0: llama.cpp reads it as "no limit"
    dist = [bd for bd in bodies if not bd.get("echo")]
    assert len(dist) == 1 and dist[0]["prompt"] == "<s>"  # asked once for both texts


def test_a_server_without_bos_and_no_bos_token_fails_every_scoring_request_with_the_fix() -> None:
    with FaultServer() as server:
        got = _run(_backend(server), [Request(key=f"s{i}", kind="sequence_logprob", text=f"text {i}")
                                      for i in range(3)] + [_chat("still answered")])
    for i in range(3):
        r = got[f"s{i}"]
        assert r.status == "failed" and r.error_kind == "unsupported"
        assert "model.bos_token" in (r.error or "") and "model.path" in (r.error or "")
    assert got["still answered"].status == "ok"  # chat probes do not need a BOS


def test_a_bos_text_the_server_reads_as_plain_text_is_refused() -> None:
    with FaultServer() as server:
        got = _run(_backend(server, bos_token="<bos>"), [Request(key="s", kind="sequence_logprob", text="a b c")])
    assert got["s"].status == "failed" and "read the BOS text '<bos>' as ordinary text" in (got["s"].error or "")


def test_align_handles_both_engines_bos_conventions() -> None:
    sent = "<|im_start|>The cat."
    # llama-cpp-python: the BOS it was sent is hidden, the first token nulled, one generated token echoed
    toks = align(["The", " cat", ".", "\n"], [None, -2.0, -1.0, -0.5], sent, "<|im_start|>")
    assert [(t.text, t.start, t.end, t.special) for t in toks] == [
        ("<|im_start|>", 0, 12, True), ("The", 12, 15, False), (" cat", 15, 19, False), (".", 19, 20, False)]
    # vLLM: the BOS shown as the first token
    toks = align(["<|im_start|>", "The", " cat", "."], [None, -3.0, -2.0, -1.0], sent, "<|im_start|>")
    cond = Conditioning("<|im_start|>", "<|im_start|>", "", "x")
    assert [(t.text, t.start, t.end, t.logprob) for t in text_tokens(toks, cond)] == [
        ("The", 0, 3, -3.0), (" cat", 3, 7, -2.0), (".", 7, 8, -1.0)]
    # a server that adds a BOS of its own, not sent
    toks = align(["<s>", "The", " cat", "."], [None, -3.0, -2.0, -1.0], "The cat.", "")
    assert toks[0].special and (toks[0].start, toks[0].end) == (0, 0)
    # a token that straddles the system prompt and the text is refused
    cond = Conditioning("", "<s>", "Be fair.\n", "x")
    toks = align(["Be", " fair", ".\nThe", " cat", "."], [None, -1.0, -1.0, -1.0, -1.0], "Be fair.\nThe cat.", "")
    with pytest.raises(OutputFault, match="spans the system prompt"):
        text_tokens(toks, cond)
    with pytest.raises(OutputFault, match="not at character"):
        align(["The", " dog"], [None, -1.0], "The cat.", "")


def test_top_k_above_the_servers_cap_is_capped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with FaultServer() as server, caplog.at_level(logging.INFO):
        got = _run(_backend(server, max_top_logprobs=5), [_chat("a", "next_token", top_k=50),
                                                          _chat("b", "next_token", top_k=3)])
    sent = {x["body"]["messages"][-1]["content"]: x["body"] for x in server.seen if "messages" in x["body"]}
    assert sent["a"]["top_logprobs"] == 5 and sent["b"]["top_logprobs"] == 3
    assert got["next_token:a" if "next_token:a" in got else "a"].output["top_k_capped_to"] == 5  # type: ignore[index]
    assert "top_k_capped_to" not in (got["b"].output or {})
    warned = [r.getMessage() for r in caplog.records if "capped" in r.getMessage()]
    assert len(warned) == 1 and "model.max_top_logprobs 5" in warned[0]
    # one line per request from httpx would drown the progress bar
    assert not [r for r in caplog.records if r.name.startswith(("httpx", "httpcore")) and r.levelno < logging.WARNING]


@pytest.mark.parametrize(("override", "key"), [
    ("+model.dtype=float16", "dtype"),
    ("+model.chat_template=false", "chat_template"),
    ("+model.serve=llamacpp", "serve"),
])
def test_settings_an_http_backend_would_ignore_are_refused(workdir: Path, cli, override: str,  # type: ignore[no-untyped-def]
                                                           key: str) -> None:
    spec = tp_spec(workdir, 2)
    code, out, err = cli("validate", f"spec={spec}", "model=openai_compat", "model.api_key_env=null", override,
                         *isolation(workdir))
    assert code == 2, out + err
    line = err.strip().splitlines()[-1]
    assert key in line and "no effect on the openai_compat backend" in line and "Traceback" not in err


def test_ar_shared_without_token_ids_is_not_a_number(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Positions are not token ids: a run whose server returns none scores `ar_shared` as
    unscorable with the reason, and its verdict is held back; `ar_full` still scores."""
    spec = tp_spec(workdir, 6)
    with FaultServer() as server:
        code, out, err = cli("run", "--fail-on", "never", f"spec={spec}", "model=openai_compat",
                             f"model.base_url={server.url}", "model.api_key_env=null", "model.bos_token='<s>'",
                             "metrics.0.mode=ar_shared", *isolation(workdir))
    assert code == 0, err
    (run,) = run_dirs(workdir)
    summary = json.loads((run / "summary.json").read_text())
    text = json.dumps(summary)
    assert "no token ids" in text
    verdicts = summary.get("verdicts") or []
    assert verdicts and all(v["verdict"] == "INCONCLUSIVE" for v in verdicts), verdicts
