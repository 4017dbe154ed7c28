"""Shared-prefix reuse when scoring a model variant (`smollm2_fair`: a standing system
prompt before every sentence): the prefix computed per row vs once per batch with its
keys/values repeated (`runtime.prefix_cache`), and the default packed prefix trees, where
the system prompt is one shared node per row anyway. Same 80 sentences, same log-probs."""

from __future__ import annotations

import time

from scoring import sentences

from biasaudit.backends import build_backend
from biasaudit.spec.compose import compose


def run(repeats: int = 2) -> list[tuple[str, float, float]]:
    c = compose(["model=smollm2_fair"])
    backend = build_backend(c.config.model, c.config.runtime)
    texts = sorted(sentences(), key=len)
    bs = c.config.runtime.batch_size
    rows = []
    outs = {}
    for label, on, packed in (("padded, prefix per row", False, False), ("padded, prefix once per batch", True, False),
                              ("prefix trees (default)", False, True)):
        backend.prefix_cache, backend.packed = on, packed
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            got = [r for i in range(0, len(texts), bs) for r in backend.sequence_logprobs(texts[i:i + bs])]
            best = min(best, time.perf_counter() - t)
        outs[label] = got
        rows.append((f"{label} (batch {bs})", len(texts) / best, best))
    backend.prefix_cache, backend.packed = c.config.runtime.prefix_cache, True
    ref = outs["padded, prefix per row"]
    diff = max(abs(a - b) for other in outs.values() for x, y in zip(ref, other, strict=True)
               for a, b in zip(x["logprobs"][1:], y["logprobs"][1:], strict=True))
    rows.append(("max |log-prob difference|", diff, 0.0))
    return rows
