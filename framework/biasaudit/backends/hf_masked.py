"""`hf_masked`: a masked LM through transformers, for pseudo-log-likelihood scoring.

For each sentence every non-special position is masked in its own copy of the
sentence, and all copies go through the model as one batch (not one forward pass per
token in a loop). The response holds log p(x_i | x_{-i}) for every position, so the
metric can pick the tokens it scores (CrowS-Pairs scores only the tokens both
sentences share) without another model call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biasaudit._util import interrupt
from biasaudit.backends.base import (
    BACKENDS,
    BackendKind,
    Emit,
    Response,
    resolve_model_path,
    run_in_batches,
    stoppable,
)
from biasaudit.backends.devices import torch_setup
from biasaudit.backends.identity import directory_digest
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.spec import HFMaskedConfig, RuntimeConfig

log = logging.getLogger(__name__)
MAX_ROWS = 128
"""Masked copies per forward pass (several short sentences share one pass)."""


def _identity(cfg: HFMaskedConfig) -> JSONObject:
    if cfg.path is None:
        raise BackendError("hf_masked needs `model.path`", key="model.path")
    where = resolve_model_path(cfg.path)
    ident: JSONObject = {"backend": "hf_masked", "dtype": cfg.dtype}
    if isinstance(where, Path):
        ident["dir_sha256"] = directory_digest(where)
    else:
        ident.update(hub_id=where, revision=cfg.revision or "main")
    return ident


class HFMaskedBackend:
    supports = frozenset({"pseudo_loglik"})

    def __init__(self, cfg: HFMaskedConfig, runtime: RuntimeConfig) -> None:
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.cfg = cfg
        self.batch_size = runtime.batch_size
        self.device, dtype = torch_setup(cfg.device, cfg.dtype, runtime.threads)
        where = resolve_model_path(cfg.path or "")
        kwargs: dict[str, Any] = {"revision": cfg.revision} if cfg.revision else {}
        t0 = time.perf_counter()
        try:
            self.tok: Any = AutoTokenizer.from_pretrained(str(where), **kwargs)
            self.model: Any = AutoModelForMaskedLM.from_pretrained(str(where), dtype=dtype, **kwargs)
        except (OSError, ValueError) as exc:
            raise BackendError(
                f"cannot load masked LM {cfg.path!r}: {str(exc).splitlines()[0]}",
                key="model.path",
                hint="give a local directory of a masked LM (nothing is downloaded at run time)",
            ) from None
        if self.tok.mask_token_id is None:
            raise BackendError(f"tokenizer of {cfg.path!r} has no mask token", key="model.path",
                               hint="pseudo_loglik needs a masked LM (BERT, RoBERTa, ...)")
        self.model.to(self.device).eval()
        log.info("loaded %s on %s in %.1fs", cfg.name, self.device, time.perf_counter() - t0)

    def encode(self, text: str) -> dict[str, Any]:
        enc = self.tok(text, add_special_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True)
        return {
            "token_ids": list(enc["input_ids"]),
            "offsets": [list(o) for o in enc["offset_mapping"]],
            "special": list(enc["special_tokens_mask"]),
        }

    def pseudo_logliks(self, texts: Sequence[str]) -> list[JSONObject]:
        import torch

        encs = [self.encode(t) for t in texts]
        # (sentence index, position) for every maskable position of every sentence
        jobs = [(s, i) for s, e in enumerate(encs) for i, sp in enumerate(e["special"]) if not sp]
        scores: dict[tuple[int, int], float] = {}
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        for start in range(0, len(jobs), MAX_ROWS):
            interrupt.check()  # one forward pass per token of every sentence: a batch takes long
            chunk = jobs[start:start + MAX_ROWS]
            width = max(len(encs[s]["token_ids"]) for s, _ in chunk)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, (s, i) in enumerate(chunk):
                seq = encs[s]["token_ids"]
                ids[row, : len(seq)] = torch.tensor(seq)
                mask[row, : len(seq)] = 1
                ids[row, i] = self.tok.mask_token_id
            with torch.inference_mode():
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
            rows = torch.arange(len(chunk))
            pos = torch.tensor([i for _, i in chunk])
            target = torch.tensor([encs[s]["token_ids"][i] for s, i in chunk])
            logp = torch.log_softmax(logits[rows, pos].double(), dim=-1)
            picked = logp[rows, target].cpu().tolist()
            for (s, i), v in zip(chunk, picked, strict=True):
                scores[(s, i)] = float(v)
        out = []
        for s, e in enumerate(encs):
            lps = [None if sp else scores[(s, i)] for i, sp in enumerate(e["special"])]
            out.append({"tokens": self.tok.convert_ids_to_tokens(e["token_ids"]), "token_ids": e["token_ids"],
                        "logprobs": lps, "offsets": e["offsets"], "special": e["special"]})
        return out

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        with stoppable(self.model):  # Ctrl-C takes effect inside a forward pass too
            self._execute(requests, emit)

    def _execute(self, requests: Sequence[Request], emit: Emit) -> None:
        for r in requests:
            if r.kind != "pseudo_loglik":
                emit(Response(key=r.key, status="failed", error=f"hf_masked cannot do {r.kind}"))
        reqs = sorted((r for r in requests if r.kind == "pseudo_loglik"), key=lambda r: len(r.text or ""))
        run_in_batches(reqs, self.batch_size, lambda batch: self.pseudo_logliks([r.text or "" for r in batch]), emit)

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        self.batch_size = runtime.batch_size

    def close(self) -> None:
        pass


BACKENDS.add(
    "hf_masked",
    BackendKind(config=HFMaskedConfig, supports=HFMaskedBackend.supports, identity=_identity,
                build=lambda cfg, rt: HFMaskedBackend(cfg, rt), local=True, keep_loaded=True),
)
