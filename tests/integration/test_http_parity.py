"""The same numbers over HTTP as in-process, against real engines serving the embedded
SmolLM2: llama.cpp (llama-cpp-python's server, `model.serve=llamacpp`) on 20 CrowS-Pairs
pairs, 10 TFDP next-token probes and 10 greedy generations, for the plain model and its
`smollm2_fair` system-prompt variant; vLLM (CPU build, `model.serve=vllm`) on the pairs
and the generations. Both engines are started, used and stopped by biasaudit.

What must hold: per-sentence log-probs within 1e-3 nats, token ids identical (so
`ar_shared` aligns the same tokens), `ar_full` and `ar_shared` bias scores identical,
next-token top-10 lists identical with log-probs within 1e-3, generations identical at
temperature 0, and the system prompt effective (the variant's numbers differ from the
plain model's, and equal the in-process variant's).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

import pytest

from biasaudit.backends import Response, build_backend
from biasaudit.backends.factory import _LOADED
from biasaudit.methods.token_probability.metric import ar_full, ar_shared
from biasaudit.plan import Request
from biasaudit.runner.pipeline import prepare
from biasaudit.spec.compose import compose
from tests.helpers import REPO as REPO_ROOT

pytestmark = pytest.mark.slow

N_PAIRS, N_PROBES, N_GENERATIONS = 20, 10, 10


def _pairs() -> list[tuple[str, str]]:
    with (REPO_ROOT / "specs" / "data" / "crows_pairs_sample.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))[:N_PAIRS]
    return [(r["sent_more"], r["sent_less"]) for r in rows]


def _requests() -> list[Request]:
    reqs = [Request(key=f"s:{t}", kind="sequence_logprob", text=t) for pair in _pairs() for t in pair]
    tfdp = list(prepare(compose(["spec=tfdp_gender"])).plan.requests.values())[:N_PROBES]
    reqs += [Request(key=f"n{i}", kind="next_token", messages=r.messages, params={"top_k": 10})
             for i, r in enumerate(tfdp)]
    asks = list(prepare(compose(["spec=refusal_stance"])).plan.requests.values())[:N_GENERATIONS]
    reqs += [Request(key=f"g{i}", kind="generate", messages=r.messages,
                     params={"temperature": 0.0, "top_p": 1.0, "max_tokens": 40}) for i, r in enumerate(asks)]
    return reqs


# The answers of each model configuration to the module's requests, computed once: the
# system-prompt test compares the two llama.cpp variants' answers that the parity tests
# already asked for, and the vLLM test compares against the in-process SmolLM2 answers the
# llama.cpp test computed (hf_causal executes each request kind on its own, so the scoring
# and generation answers do not depend on the next-token requests beside them). Each
# repeat cost minutes of generation on a CPU.
_ANSWERS: dict[tuple[tuple[str, ...], tuple[str, ...]], dict[str, Any]] = {}


def _answers(overrides: list[str], reqs: list[Request]) -> dict[str, Any]:
    key = (tuple(overrides), tuple(r.key for r in reqs))
    if key not in _ANSWERS:
        cfg = compose(overrides).config
        backend = build_backend(cfg.model, cfg.runtime)
        got: list[Response] = []
        backend.execute(reqs, got.append)
        bad = [(r.key, r.error) for r in got if r.status != "ok"]
        assert not bad, bad[:3]
        _ANSWERS[key] = {r.key: r.output for r in got}
    return _ANSWERS[key]


@pytest.fixture(scope="module")
def requests_() -> Iterator[list[Request]]:
    yield _requests()
    _ANSWERS.clear()


@pytest.fixture(scope="module", autouse=True)
def _stop_engines() -> Iterator[None]:
    yield
    for key in [k for k, b in _LOADED.items() if hasattr(b, "shutdown")]:
        _LOADED.pop(key).shutdown()  # type: ignore[attr-defined]


def _check_scoring(local: dict[str, Any], http: dict[str, Any]) -> None:
    worst = 0.0
    for more, less in _pairs():
        for t in (more, less):
            a, b = local[f"s:{t}"], http[f"s:{t}"]
            assert a["token_ids"] == b["token_ids"], t
            worst = max(worst, abs(ar_full(a) - ar_full(b)))
        la, lb = local[f"s:{more}"], local[f"s:{less}"]
        ha, hb = http[f"s:{more}"], http[f"s:{less}"]
        assert (ar_full(la) > ar_full(lb)) == (ar_full(ha) > ar_full(hb)), more
        sa, sb, n = ar_shared(la, lb)
        xa, xb, m = ar_shared(ha, hb)
        assert n == m and abs(sa - xa) < 1e-3 and abs(sb - xb) < 1e-3, more
        assert (sa > sb) == (xa > xb), more
    assert worst < 1e-3, f"largest per-sentence log-prob difference {worst:.2e} nats"


def _bias_scores(out: dict[str, Any]) -> tuple[float, float]:
    pairs = _pairs()
    full = 100 * sum(ar_full(out[f"s:{m}"]) > ar_full(out[f"s:{le}"]) for m, le in pairs) / len(pairs)
    shared = 100 * sum(a > b for a, b, _ in (ar_shared(out[f"s:{m}"], out[f"s:{le}"]) for m, le in pairs)) / len(pairs)
    return full, shared


def _check_chat(local: dict[str, Any], http: dict[str, Any], next_token: bool = True) -> None:
    for i in range(N_GENERATIONS):
        assert http[f"g{i}"]["text"] == local[f"g{i}"]["text"], i
    if next_token:
        for i in range(N_PROBES):
            a, b = local[f"n{i}"]["top"], http[f"n{i}"]["top"]
            assert [t for t, _ in a] == [t for t, _ in b], i
            assert max(abs(x - y) for (_, x), (_, y) in zip(a, b, strict=True)) < 1e-3, i


@pytest.mark.parametrize("variant", ["smollm2", "smollm2_fair"])
def test_llamacpp_server_gives_the_in_process_numbers(requests_: list[Request], variant: str) -> None:
    local = _answers([f"model={variant}"], requests_)
    http = _answers([f"model={variant}", "model.serve=llamacpp"], requests_)
    _check_scoring(local, http)
    assert _bias_scores(local) == _bias_scores(http)
    _check_chat(local, http)
    conditioning = http[f"s:{_pairs()[0][0]}"]["conditioning"]
    assert "'<|im_start|>', sent before each text (llama-cpp-python server)" in conditioning
    assert ("system prompt as context" in conditioning) == (variant == "smollm2_fair")


def test_the_system_prompt_takes_effect_over_http(requests_: list[Request]) -> None:
    plain = _answers(["model=smollm2", "model.serve=llamacpp"], requests_)
    fair = _answers(["model=smollm2_fair", "model.serve=llamacpp"], requests_)
    moved = [abs(ar_full(plain[k]) - ar_full(fair[k])) for k in plain if k.startswith("s:")]
    assert min(moved) > 0.01  # every sentence is scored under the variant's context
    assert sum(plain[f"g{i}"]["text"] != fair[f"g{i}"]["text"] for i in range(N_GENERATIONS)) >= N_GENERATIONS // 2


def test_vllm_server_gives_the_in_process_numbers(requests_: list[Request]) -> None:
    scoring_and_answers = [r for r in requests_ if r.kind != "next_token"]
    local = _answers(["model=smollm2"], requests_)  # the llama.cpp test's, when it ran first
    http = _answers(["model=smollm2", "model.serve=vllm"], scoring_and_answers)
    _check_scoring(local, http)
    assert _bias_scores(local) == _bias_scores(http)
    _check_chat(local, http, next_token=False)
    assert "(vllm server)" in http[f"s:{_pairs()[0][0]}"]["conditioning"]
