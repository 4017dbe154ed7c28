"""Scoring throughput on SmolLM2: biasaudit's `hf_causal` engine path against the peer,
lm-evaluation-harness's `crows_pairs` log-likelihood path (HFLM.loglikelihood with an
empty context, i.e. BOS + sentence, exactly what the task asks), on the same loaded
model weights and the same CrowS-Pairs-format sentences (the shipped sample).

When `lm-eval` is not installed (`make bench` installs the `bench` extra), the peer is a
plain transformers loop written the way the transformers docs show it (one sentence per
forward pass, `labels=input_ids`, loss times length).

Every path must agree on every sentence's log-likelihood (printed, and checked against
2e-4 by `run.py`), and give the same CrowS-Pairs bias score, so the comparison is between
ways of computing the same numbers. biasaudit's rows isolate what each idea gives:
prefix-tree packing in rows of even length (the default), the same trees in greedily
filled rows, packing without prefix sharing, padded token-budget batches (the previous
default), fixed padded batches.
"""

from __future__ import annotations

import time
from typing import Any

from scoring import sentences
from scoring_paths import bias_score, lm_eval_peer, ours

from biasaudit.backends import build_backend
from biasaudit.spec.compose import compose


def transformers_loop(backend: Any) -> Any:
    import torch

    def run(texts: list[str]) -> list[float]:
        out = []
        for t in texts:
            ids = torch.tensor([[backend.bos_id, *backend.tok(t, add_special_tokens=False)["input_ids"]]])
            with torch.inference_mode():
                loss = backend.model(input_ids=ids, labels=ids).loss
            out.append(-float(loss) * (ids.shape[1] - 1))
        return out

    return run


def run(repeats: int = 4, paired_rounds: int = 8) -> dict[str, Any]:
    c = compose([])
    backend = build_backend(c.config.model, c.config.runtime)
    bs, budget = c.config.runtime.batch_size, c.config.runtime.batch_tokens
    texts = sentences()

    def mode(packed: bool, share: bool = True, tokens: int | None = budget, balance: bool = True) -> Any:
        def fn(t: list[str]) -> list[float]:
            backend.packed, backend.share_prefixes, backend.batch_tokens = packed, share, tokens
            backend.balance_rows = balance
            try:
                return ours(backend, t)
            finally:
                backend.packed, backend.share_prefixes, backend.batch_tokens = True, True, budget
                backend.balance_rows = True
        return fn

    ideas = {
        f"biasaudit default (prefix trees, <= {budget} tokens)": mode(True),
        "biasaudit, prefix trees in greedily filled rows": mode(True, balance=False),
        "biasaudit, packed without prefix sharing": mode(True, share=False),
        f"biasaudit, padded batches of <= {budget} tokens": mode(False),
        f"biasaudit, padded batch {bs}": mode(False, tokens=None),
    }
    try:
        import lm_eval  # noqa: F401

        sizes = (8, 16, 32, 64, 128)
        peers = {f"lm-eval HFLM, batch {n}": lm_eval_peer(backend, n) for n in sizes}
        peers["lm-eval HFLM, batch 1 (its default)"] = lm_eval_peer(backend, 1)
        peer_kind = "lm-eval " + lm_eval.__version__ if hasattr(lm_eval, "__version__") else "lm-eval"
    except ImportError:
        peers = {"transformers loop (docs)": transformers_loop(backend)}
        peer_kind = "transformers loop"
    fns = {**ideas, **peers}
    # Same numbers first: every path against the default, sentence by sentence.
    answers = {label: fn(texts) for label, fn in fns.items()}
    default = answers[next(iter(ideas))]
    diffs = {label: max(abs(a - b) for a, b in zip(default, got, strict=True)) for label, got in answers.items()}
    scores = {label: bias_score(got) for label, got in answers.items()}
    # Interleaved rounds, best of each: on a shared 2-core machine one pass varies by
    # +-15%, and the first passes run slower (allocator warm-up), so one timing each in
    # sequence would favour whichever ran last.
    best = {label: float("inf") for label in fns}
    for _ in range(repeats):
        for label, fn in fns.items():
            if label.endswith("(its default)") and best[label] < float("inf"):
                continue  # batch 1 is slow and steady: one timing is enough
            best[label] = min(best[label], _timed(fn, texts))
    first = next(iter(ideas))
    fastest_peer = min(peers, key=best.__getitem__)
    # Then the two rows the acceptance ratio compares, in paired rounds: the peer's
    # fastest configuration gets as many timings as biasaudit's default (the first phase
    # gave it one chance per batch size to be lucky), and each round's own ratio shows
    # how much the figure moves with the machine's noise.
    paired: list[float] = []
    for _ in range(paired_rounds):
        ours_s, peer_s = _timed(fns[first], texts), _timed(fns[fastest_peer], texts)
        best[first], best[fastest_peer] = min(best[first], ours_s), min(best[fastest_peer], peer_s)
        paired.append(peer_s / ours_s)
    rows = [(label, len(texts) / secs) for label, secs in best.items()]
    rate = dict(rows)
    fastest_peer = max(peers, key=rate.__getitem__)
    same_batch = f"lm-eval HFLM, batch {bs}" if f"lm-eval HFLM, batch {bs}" in rate else fastest_peer
    return {"rows": rows, "peer": peer_kind, "n": len(texts), "batch_size": bs, "diffs": diffs, "scores": scores,
            "max_abs_diff": max(diffs[p] for p in peers), "fastest_peer": fastest_peer,
            "ratio_best_peer": rate[first] / rate[fastest_peer], "ratio_same_batch": rate[first] / rate[same_batch],
            "paired_ratios": sorted(paired),
            "ideas": {label: rate[label] / rate[f"biasaudit, padded batches of <= {budget} tokens"] for label in ideas}}


def _timed(fn: Any, texts: list[str]) -> float:
    t0 = time.perf_counter()
    fn(texts)
    return time.perf_counter() - t0
