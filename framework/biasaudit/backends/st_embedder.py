"""Embedder `sentence_transformers`: a sentence-transformers model (a directory, a hub
id, or `pkg:<package>` for one shipped on PyPI), the default kind of the `embedder` group."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from biasaudit.backends.base import resolve_model_path
from biasaudit.backends.devices import pick_device
from biasaudit.backends.embedder import EmbedderKind, Encode
from biasaudit.backends.identity import directory_digest
from biasaudit.records.json import JSONObject
from biasaudit.registry import EMBEDDERS
from biasaudit.spec import BaseEmbedderConfig


class SentenceTransformersConfig(BaseEmbedderConfig):
    """A sentence-transformers model (`embedder=minilm`)."""

    backend: Literal["sentence_transformers"] = "sentence_transformers"
    """`sentence_transformers` (the default kind)."""
    path: str
    """Model directory, Hugging Face id, or `pkg:<python package>`."""
    device: str = "auto"
    """`auto`, `cpu`, `cuda`, `cuda:N` or `mps`."""


def _identity(cfg: SentenceTransformersConfig) -> JSONObject:
    # the same key as before embedders registered, so cached and packed vectors still match
    where = resolve_model_path(cfg.path, key="embedder.path")
    return {"dir": directory_digest(where) if isinstance(where, Path) else str(where)}


def _load(cfg: SentenceTransformersConfig) -> Encode:
    from sentence_transformers import SentenceTransformer

    model: Any = SentenceTransformer(str(resolve_model_path(cfg.path, key="embedder.path")),
                                     device=pick_device(cfg.device))

    def encode(texts: list[str]) -> Any:
        return model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)
    return encode


EMBEDDERS.add("sentence_transformers", EmbedderKind(config=SentenceTransformersConfig, identity=_identity,
                                                     load=_load, default=True))
