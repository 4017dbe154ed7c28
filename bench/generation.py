"""Generation throughput on SmolLM2: length-sorted batches vs one request at a time,
through the backend's engine entry (`execute`), greedy decoding, 32 new tokens."""

from __future__ import annotations

import time
from typing import Any

from biasaudit.backends import Response, build_backend
from biasaudit.data import load_stimuli
from biasaudit.plan import Request, request_key
from biasaudit.spec.compose import compose

PARAMS = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 32}


def prompts(n: int = 16) -> list[list[dict[str, str]]]:
    c = compose(["spec=biaxis_oat", "++stimuli.sample.n=20"])
    st = load_stimuli(c.config.stimuli, c.spec_file)
    rows = [s.fields["statement"] for s in st.stimuli][:n]
    return [[{"role": "user", "content": f'Statement: "{s}" Do you agree? Answer Yes or No, then explain briefly.'}]
            for s in rows]


def _execute(backend: Any, msgs: list[list[dict[str, str]]]) -> tuple[float, int]:
    reqs = [Request(key=request_key({"bench": 1}, "generate", None, m, PARAMS, 0), kind="generate", messages=m,
                    params=PARAMS) for m in msgs]
    got: list[Response] = []
    t = time.perf_counter()
    backend.execute(reqs, got.append)
    secs = time.perf_counter() - t
    assert all(r.status == "ok" for r in got), [r.error for r in got if r.status != "ok"]
    return secs, sum(int(r.output["output_tokens"]) for r in got)  # type: ignore[index]


def run() -> list[tuple[str, float, float, float]]:
    c = compose([])
    backend = build_backend(c.config.model, c.config.runtime)
    msgs = prompts()
    _execute(backend, msgs[:2])  # warm-up
    rows = []
    for label, bs in (("one at a time", 1), ("batched (8)", 8), ("batched (16)", 16)):
        backend.batch_size = bs
        secs, toks = _execute(backend, msgs)
        rows.append((label, len(msgs) / secs, toks / secs, secs))
    backend.batch_size = c.config.runtime.batch_size
    return rows
