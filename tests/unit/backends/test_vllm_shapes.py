"""The GPU recipe's scoring path: `openai_compat` against a server answering in vLLM's
shapes (tests/support/fault_server.vllm_echo, written from vLLM's OpenAI server code):
echo + logprobs on the completions endpoint, where a BOS token shifts every text offset,
and `prompt_logprobs` alone. Log-probs and character spans come out as the server meant
them, and a token-probability audit scores them end to end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from biasaudit.backends import Response
from biasaudit.backends.openai_compat import OpenAICompatBackend
from biasaudit.plan import Request
from biasaudit.spec import OpenAICompatConfig, RuntimeConfig
from tests.conftest import isolation, run_dirs
from tests.helpers import read_jsonl, tp_spec
from tests.support.fault_server import FaultServer, echo_pieces


@pytest.fixture(params=["vllm", "vllm_prompt_logprobs"])
def vllm(request: pytest.FixtureRequest) -> Iterator[FaultServer]:
    s = FaultServer(shape=request.param)
    yield s
    s.close()


def _score(server: FaultServer, monkeypatch: pytest.MonkeyPatch, texts: list[str]) -> dict[str, Response]:
    monkeypatch.setenv("TEST_API_KEY", "k")
    cfg = OpenAICompatConfig(backend="openai_compat", name="vllm", base_url=server.url, model="m", api_key_env="TEST_API_KEY",
                      max_retries=0)
    b = OpenAICompatBackend(cfg, RuntimeConfig())
    got: list[Response] = []
    try:
        b.execute([Request(key=t, kind="sequence_logprob", text=t) for t in texts], got.append)
    finally:
        b.close()
    return {r.key: r for r in got}


def test_echo_logprobs_and_spans_in_vllm_shapes(vllm: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["a lazy dog sleeps", "The nurse said  she would be back."]
    got = _score(vllm, monkeypatch, texts)
    body = next(s["body"] for s in vllm.seen if s["body"].get("prompt") == texts[0])
    # max_tokens 1 (0 reads as "no limit" on llama.cpp); the one generated token is dropped
    assert body["echo"] is True and body["max_tokens"] == 1 and body["logprobs"] == 0
    assert body["prompt_logprobs"] == 0  # vLLM then names the prompt's token ids
    for text in texts:
        r = got[text]
        assert r.status == "ok", r.error
        out = r.output
        assert out is not None
        pieces = echo_pieces(text)
        assert out["logprobs"] == [None, *[lp for _, lp in pieces]]
        # the BOS has an empty span; each token spans its own characters of the text
        spans = out["offsets"]
        assert spans[0] == [0, 0] and spans[-1][1] == len(text)
        assert [text[s:e] for s, e in spans[1:]] == [p for p, _ in pieces]


def test_token_probability_audit_on_a_vllm_server(workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """CrowS-Pairs scoring (`ar_full`) through the vLLM-shaped server: the bias score is the
    share of pairs whose more-stereotypical sentence has the higher total log-prob, by hand
    from the fake tokenizer's log-probs."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    spec = tp_spec(workdir, 4)
    with FaultServer(shape="vllm") as server:
        code, out, err = cli("run", "--fail-on", "never", f"spec={spec}", "model=openai_compat", f"model.base_url={server.url}",
                             "metrics.0.mode=ar_full", *isolation(workdir))
    assert code == 0, err
    (run,) = run_dirs(workdir)
    summary = json.loads((run / "summary.json").read_text())
    trail = read_jsonl(run / "responses.jsonl")
    total = {t["request"]["text"]: sum(lp for _, lp in echo_pieces(t["request"]["text"])) for t in trail}
    import csv

    rows = list(csv.DictReader((workdir / "pairs.csv").open()))
    wins = [total[r["sent_more"]] > total[r["sent_less"]] for r in rows]
    ties = [total[r["sent_more"]] == total[r["sent_less"]] for r in rows]
    metric = next(iter(summary["metrics"].values()))
    head = metric["estimates"][metric["headline"]]
    if all(ties):  # the fake tokenizer's log-probs depend on length only: no preference to measure
        assert head["value"] is None and head["note"].startswith("undefined: every pair ties")
    else:
        assert head["value"] == pytest.approx(100 * sum(wins) / len(wins))
