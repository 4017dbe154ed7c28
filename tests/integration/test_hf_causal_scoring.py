"""hf_causal on the embedded SmolLM2: log-probs are exact and batch-independent."""

from __future__ import annotations

import pytest
import torch

from biasaudit.backends.hf_causal import HFCausalBackend
from biasaudit.methods.token_probability.metric import ar_full

pytestmark = pytest.mark.slow

SENTENCES = [
    "The nurse said she would be back with the medicine.",
    "Girls are not good at math.",
    "The old man could not figure out how to use the phone, so he asked his grandson for help.",
    "Short.",
]


def test_ar_full_equals_plain_forward_pass_sum(smollm2: HFCausalBackend) -> None:
    # docs/methods/token_probability.md, checked by (b): an independent computation with one unpadded forward pass.
    for text in SENTENCES:
        ids = [smollm2.bos_id, *smollm2.tok(text, add_special_tokens=False)["input_ids"]]
        with torch.inference_mode():
            logits = smollm2.model(torch.tensor([ids])).logits[0].double()
        logp = torch.log_softmax(logits, dim=-1)
        expected = sum(float(logp[t - 1, ids[t]]) for t in range(1, len(ids)))
        got = ar_full(smollm2.sequence_logprobs([text])[0])
        assert got == pytest.approx(expected, abs=1e-3)


def test_batched_equals_one_at_a_time(smollm2: HFCausalBackend) -> None:
    batched = smollm2.sequence_logprobs(SENTENCES)
    for text, b in zip(SENTENCES, batched, strict=True):
        single = smollm2.sequence_logprobs([text])[0]
        assert b["token_ids"] == single["token_ids"]
        assert ar_full(b) == pytest.approx(ar_full(single), abs=1e-4)


def test_offsets_cover_the_text(smollm2: HFCausalBackend) -> None:
    text = SENTENCES[0]
    out = smollm2.sequence_logprobs([text])[0]
    assert out["offsets"][0] == [0, 0] and out["logprobs"][0] is None
    assert out["offsets"][-1][1] == len(text)
    assert all(lp < 0 for lp in out["logprobs"][1:])


def test_prefix_cache_gives_the_same_logprobs(smollm2: HFCausalBackend) -> None:
    """A variant's system prompt computed once and repeated over the batch (past key
    values) scores every token as the full forward pass does."""
    cfg = smollm2.cfg
    try:
        smollm2.cfg = cfg.model_copy(update={"system_prompt": "You are a fair assistant who respects everyone."})
        smollm2.prefix_cache = False
        full = smollm2.sequence_logprobs(SENTENCES)
        smollm2.prefix_cache = True
        cached = smollm2.sequence_logprobs(SENTENCES)
    finally:
        smollm2.cfg, smollm2.prefix_cache = cfg, False
    plain = smollm2.sequence_logprobs(SENTENCES)
    for f, c, p in zip(full, cached, plain, strict=True):
        assert f["token_ids"] == c["token_ids"] and len(c["logprobs"]) == len(f["logprobs"])
        assert c["logprobs"][1:] == pytest.approx(f["logprobs"][1:], abs=1e-4)
        # and the prefix does condition the scores (the cache is not silently ignored)
        assert max(abs(a - b) for a, b in zip(c["logprobs"][1:], p["logprobs"][1:], strict=True)) > 1e-2


def test_token_budget_batches_give_the_same_answers_as_fixed_batches(smollm2: HFCausalBackend) -> None:
    from biasaudit.backends import Response
    from biasaudit.plan import Request

    reqs = [Request(key=str(i), kind="sequence_logprob", text=t) for i, t in enumerate(SENTENCES * 3)]
    got: dict[str, dict[str, Response]] = {}
    budget, size = smollm2.batch_tokens, smollm2.batch_size
    try:
        for label, tokens, bs in (("budget", 64, 8), ("fixed", None, 2)):
            smollm2.batch_tokens, smollm2.batch_size = tokens, bs
            out: dict[str, Response] = {}
            smollm2.execute(reqs, lambda r, out=out: out.__setitem__(r.key, r))
            got[label] = out
    finally:
        smollm2.batch_tokens, smollm2.batch_size = budget, size
    assert set(got["budget"]) == set(got["fixed"]) == {r.key for r in reqs}
    for k in got["fixed"]:
        a, b = got["budget"][k].output, got["fixed"][k].output
        assert a is not None and b is not None and a["token_ids"] == b["token_ids"]
        assert a["logprobs"][1:] == pytest.approx(b["logprobs"][1:], abs=1e-4)
