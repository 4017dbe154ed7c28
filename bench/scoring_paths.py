"""The scoring paths `peer_scoring.py` (CPU, `make bench`) and `gpu_scoring.py` (CUDA)
time: biasaudit's engine path and lm-evaluation-harness's log-likelihood path on the
same loaded model. No Hydra here, so the GPU script runs where only torch,
transformers, pydantic and lm-eval are installed."""

from __future__ import annotations

from typing import Any

from biasaudit.backends import Response
from biasaudit.plan import Request, request_key


def ours(backend: Any, texts: list[str]) -> list[float]:
    """The engine path: `execute` (its own batching) with results emitted per request;
    each text's log-likelihood (BOS + text). A failed request stops the bench."""
    reqs = [Request(key=request_key({"bench": 1}, "sequence_logprob", t, None, {}, 0), kind="sequence_logprob",
                    text=t) for t in texts]
    got: dict[str, Response] = {}
    backend.execute(reqs, lambda r: got.__setitem__(r.key, r))
    failed = [got[r.key] for r in reqs if got[r.key].status != "ok"]
    if failed:
        raise SystemExit(f"{len(failed)} of {len(reqs)} requests failed, first: {failed[0].error}")
    return [float(sum(got[r.key].output["logprobs"][1:])) for r in reqs]  # type: ignore[index]


def lm_eval_peer(backend: Any, batch_size: int) -> Any:
    """lm-eval's `crows_pairs` path: `HFLM.loglikelihood` with an empty context (BOS +
    sentence), given the already loaded model and tokenizer."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=backend.model, tokenizer=backend.tok, batch_size=batch_size, device=backend.device,
              prefix_token_id=backend.bos_id)

    def run(texts: list[str]) -> list[float]:
        reqs = [Instance(request_type="loglikelihood", doc={}, arguments=("", t), idx=i) for i, t in enumerate(texts)]
        return [float(ll) for ll, _greedy in lm.loglikelihood(reqs, disable_tqdm=True)]

    return run


def bias_score(lls: list[float], n_pairs: int | None = None) -> float:
    """CrowS-Pairs bias score of the flattened (more, less) pairs, the first `n_pairs`
    of them (all by default): % preferring `more`."""
    pairs = list(zip(lls[0::2], lls[1::2], strict=True))[:n_pairs]
    return 100.0 * sum(a > b for a, b in pairs) / len(pairs)
