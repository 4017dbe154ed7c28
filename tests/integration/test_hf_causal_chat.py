"""hf_causal chat probes on SmolLM2: batched greedy generation and next-token tops."""

from __future__ import annotations

import math

import pytest

from biasaudit.backends.hf_causal import HFCausalBackend
from biasaudit.plan import Request

pytestmark = pytest.mark.slow


def gen_request(key: str, text: str, max_tokens: int = 12) -> Request:
    return Request(key=key, kind="generate", messages=[{"role": "user", "content": text}],
                   params={"temperature": 0.0, "top_p": 1.0, "max_tokens": max_tokens})


def test_greedy_generation_is_batch_independent(smollm2: HFCausalBackend) -> None:
    reqs = [gen_request("a", "What is the capital of France?"), gen_request("b", "Name a colour.")]
    batched = smollm2.generate(reqs)
    single = [smollm2.generate([r])[0] for r in reqs]
    for b, s in zip(batched, single, strict=True):
        assert b["text"] == s["text"] and b["text"].strip()
        assert 0 < b["output_tokens"] <= 12


def test_next_token_distribution(smollm2: HFCausalBackend) -> None:
    msgs = [[{"role": "user", "content": "Answer Yes or No: is the sky blue?"}]]
    [out] = smollm2.next_token(msgs, top_k=5)
    lps = [lp for _, lp in out["top"]]
    assert len(lps) == 5 and lps == sorted(lps, reverse=True)
    assert 0 < sum(math.exp(x) for x in lps) <= 1.0 + 1e-9


def test_execute_emits_every_request(smollm2: HFCausalBackend) -> None:
    reqs = [gen_request(str(i), f"Say the number {i}.", 4) for i in range(3)]
    reqs.append(Request(key="s", kind="sequence_logprob", text="A short sentence."))
    got = []
    smollm2.execute(reqs, got.append)
    assert sorted(r.key for r in got) == ["0", "1", "2", "s"]
    assert all(r.status == "ok" for r in got)


def test_choice_reads_one_next_token_distribution(smollm2: HFCausalBackend) -> None:
    req = Request(key="j", kind="choice", messages=[{"role": "user", "content":
                  "Is the sky blue? Answer with one letter: A = yes, B = no."}], params={"choices": ["A", "B", "C"]})
    [out] = smollm2.choices([req])
    assert set(out["probs"]) == {"A", "B", "C"} and abs(sum(out["probs"].values()) - 1) < 1e-12
    assert out["choice"] == max(out["probs"], key=out["probs"].get)


@pytest.mark.serial  # a wall-clock bound
def test_an_interrupt_stops_generation_after_the_current_token(smollm2: HFCausalBackend) -> None:
    """The stopping criterion checks the stop flag after every generated token: a batch of
    long answers stops at the next token step, and none of it is returned (it is redone
    on resume), instead of running to `max_tokens` first."""
    import time

    from biasaudit._util import interrupt
    from biasaudit.backends.base import token_step

    steps: list[int] = []

    def tick(step: int, max_steps: int, rows: int) -> None:
        steps.append(step)
        assert (max_steps, rows) == (400, 2)
        if step == 3:
            interrupt.request()  # what the engine's Ctrl-C handler does

    reqs = [gen_request("a", "Count from 1 to 500, one number per line.", 400),
            gen_request("b", "Write a very long story about a lighthouse.", 400)]
    token = token_step.set(tick)
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            smollm2.generate(reqs)
    finally:
        token_step.reset(token)
        interrupt.clear()
    took = time.monotonic() - t0
    assert steps == [1, 2, 3], steps  # stopped after the token step that saw the request, not at 400
    assert took < 60
