"""Scoring throughput of `sequence_logprob` on SmolLM2: batched vs one at a time.

Uses the 80 sentences of the shipped CrowS-Pairs sample, through the same backend the
audits use. Timing lives here, never in tests.
"""

from __future__ import annotations

import time

from biasaudit.backends import build_backend
from biasaudit.data import load_stimuli
from biasaudit.spec.compose import compose


def sentences() -> list[str]:
    c = compose([])
    st = load_stimuli(c.config.stimuli, c.spec_file)
    return [s.fields[k] for s in st.stimuli for k in ("more", "less")]


def run(repeats: int = 2) -> list[tuple[str, float, float]]:
    c = compose([])
    t0 = time.perf_counter()
    backend = build_backend(c.config.model, c.config.runtime)
    load_s = time.perf_counter() - t0
    texts = sentences()
    backend.sequence_logprobs(texts[:4])  # warm-up
    n_tok = dict(zip(texts, (len(ids) for ids in backend.tok(texts, add_special_tokens=False)["input_ids"]), strict=True))
    order = sorted(texts, key=n_tok.__getitem__)  # the engine sorts by token length before batching
    rows = []
    for label, bs in (("one at a time", 1), ("batched (8)", 8), ("batched (16)", 16), ("batched (32)", 32)):
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            for i in range(0, len(order), bs):
                backend.sequence_logprobs(order[i:i + bs])
            best = min(best, time.perf_counter() - t)
        rows.append((label, len(texts) / best, best))
    rows.append(("(model load, s)", load_s, load_s))
    return rows
