"""`hf_nli`: a sequence-classification NLI model through transformers.

Labels are mapped through the model's own `id2label` (never an assumed index order);
when its label names are not recognisably entailment / neutral / contradiction, loading
fails with a clear error unless `label_map` says what they mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from biasaudit.backends.base import Backend, Emit, resolve_model_path, run_in_batches, stoppable
from biasaudit.backends.devices import torch_setup
from biasaudit.backends.identity import directory_digest
from biasaudit.backends.nli_kind import RELATIONS, NLIBuild, NLIKind, v1_dump
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.registry import NLI_KINDS
from biasaudit.spec import BaseNLIConfig, Relation, RuntimeConfig


class HFNLIConfig(BaseNLIConfig):
    """A sequence-classification NLI model run in this process (`nli=hf`)."""

    backend: Literal["hf_nli"]
    """`hf_nli`: a sequence-classification NLI model through transformers."""
    path: str | None = None
    """A sequence-classification NLI model (directory, cached hub id, or `pkg:<package>`)."""
    label_map: dict[str, Relation] = Field(default_factory=dict)
    """Model label name -> relation, when the names are not self-explanatory."""
    dtype: Literal["float32", "float16", "bfloat16", "auto"] = "float32"
    """Weights' dtype."""
    device: str = "auto"
    """`auto`, `cpu`, `cuda`, `cuda:N` or `mps`."""


def relation_of(label: str) -> str | None:
    name = label.strip().lower()
    if name.startswith("entail"):
        return "entailment"
    if name.startswith("neutral"):
        return "neutral"
    if name.startswith("contradict"):
        return "contradiction"
    return None


def label_indices(id2label: dict[int, str], label_map: dict[str, str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for idx, label in id2label.items():
        rel = label_map.get(label) or relation_of(label)
        if rel is not None:
            if rel in found:
                raise BackendError(f"two NLI labels map to {rel}: {id2label}", key="nli.label_map")
            found[rel] = int(idx)
    missing = [r for r in RELATIONS if r not in found]
    if missing:
        raise BackendError(
            f"the model's labels {dict(id2label)} are not recognisably entailment / neutral / contradiction "
            f"(missing {', '.join(missing)})",
            key="nli.label_map",
            hint="set nli.label_map, e.g. {LABEL_0: entailment, LABEL_1: neutral, LABEL_2: contradiction}",
        )
    return found


def identity(cfg: HFNLIConfig, chat_identity: JSONObject | None = None) -> JSONObject:
    if not cfg.path:
        raise BackendError("hf_nli needs `nli.path`", key="nli.path")
    where = resolve_model_path(cfg.path, key="nli.path")
    ident: JSONObject = {"backend": "hf_nli", "dtype": cfg.dtype, "label_map": {**cfg.label_map}}
    if isinstance(where, Path):
        ident["dir_sha256"] = directory_digest(where)
    else:
        ident["hub_id"] = where
    return ident


class HFNLIBackend:
    """`classify_nli` (premise, hypothesis) -> relation probabilities; `classify` (one
    text) -> probabilities over the model's own labels (any sequence-classification
    model, for `classifier` coding layers)."""

    supports = frozenset({"classify_nli", "classify"})

    def __init__(self, cfg: HFNLIConfig, runtime: RuntimeConfig, relations: bool = True) -> None:
        """`relations`: the model must be an NLI model (its labels recognisably the three
        relations, or mapped); False for a text classifier used by `classifier` layers."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.batch_size = runtime.batch_size
        self.device, dtype = torch_setup(cfg.device, cfg.dtype, runtime.threads)
        where = resolve_model_path(cfg.path or "", key="nli.path")
        try:
            self.tok: Any = AutoTokenizer.from_pretrained(str(where))
            self.model: Any = AutoModelForSequenceClassification.from_pretrained(str(where), dtype=dtype)
        except (OSError, ValueError) as exc:
            raise BackendError(f"cannot load NLI model {cfg.path!r}: {str(exc).splitlines()[0]}", key="nli.path") from None
        self.labels = {int(i): str(name) for i, name in self.model.config.id2label.items()}
        self.index: dict[str, int] | None = None
        if relations:
            self.index = label_indices(dict(self.model.config.id2label), dict(cfg.label_map))
        self.model.to(self.device).eval()

    def _probs(self, *texts: list[str]) -> Any:
        import torch

        enc = self.tok(*texts, return_tensors="pt", padding=True, truncation=True)
        with torch.inference_mode():
            logits = self.model(**{k: v.to(self.device) for k, v in enc.items()}).logits.double()
        return torch.softmax(logits, dim=-1).cpu()

    def classify(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[JSONObject]:
        if self.index is None:
            raise BackendError("this model was loaded as a text classifier, not for NLI", key="nli.path")
        index = self.index
        probs = self._probs(list(premises), list(hypotheses))
        return [{"probs": {rel: float(row[index[rel]]) for rel in RELATIONS}} for row in probs]

    def classify_texts(self, texts: Sequence[str]) -> list[JSONObject]:
        probs = self._probs(list(texts))
        return [{"probs": {self.labels[i]: float(row[i]) for i in range(len(row))}} for row in probs]

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        with stoppable(self.model):  # Ctrl-C takes effect inside a forward pass too
            self._execute(requests, emit)

    def _execute(self, requests: Sequence[Request], emit: Emit) -> None:
        reqs = sorted(requests, key=lambda r: len(r.text or "") + len(r.text_pair or ""))
        single = [r for r in reqs if r.kind == "classify"]
        pairs = [r for r in reqs if r.kind != "classify"]
        run_in_batches(single, self.batch_size, lambda b: self.classify_texts([r.text or "" for r in b]), emit)
        run_in_batches(pairs, self.batch_size,
                       lambda b: self.classify([r.text or "" for r in b], [r.text_pair or "" for r in b]), emit)

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        self.batch_size = runtime.batch_size

    def close(self) -> None:
        pass


def _build(cfg: HFNLIConfig, how: NLIBuild) -> Backend:
    return HFNLIBackend(cfg, how.runtime, relations=how.relations)


NLI_KINDS.add("hf_nli", NLIKind(config=HFNLIConfig, identity=identity, build=_build, own_weights=True,
                                classifier=True, legacy_dump=v1_dump))
