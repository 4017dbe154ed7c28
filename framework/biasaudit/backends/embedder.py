"""Sentence embeddings (the `embedder` group) with a content-addressed cache in the store:
a string is embedded once per embedder, whatever run or metric setting asks again. The
kinds that turn texts into vectors register in `EMBEDDERS` (`EmbedderKind`); this module
only caches what they give."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from biasaudit.errors import BackendError
from biasaudit.records.json import JSONObject
from biasaudit.registry import EMBEDDERS as EMBEDDERS  # re-exported: embedders register here
from biasaudit.spec import BaseEmbedderConfig, EmbedderConfig

log = logging.getLogger(__name__)

E = TypeVar("E", bound=BaseEmbedderConfig)

Encode = Callable[[list[str]], Any]
"""Texts -> one row per text (a float array), each row of unit L2 norm."""


@dataclass(frozen=True)
class EmbedderKind(Generic[E]):
    """An embedder: its config model (chosen by `embedder.backend`), what its vectors
    depend on, and how it is loaded."""

    config: type[E]
    identity: Callable[[E], JSONObject]
    """What the vectors depend on besides the config's name (e.g. a digest of the model
    directory): the cache keys them on it. Read when the embedder is opened, so a missing
    model is said before anything runs."""
    load: Callable[[E], Encode]
    """Loads the model (only when a text is not in the cache) and gives its encoder."""
    default: bool = False
    """The kind an embedder config without a `backend` key selects (one kind at most)."""


class Embedder:
    """L2-normalised embeddings; `calls` counts strings actually sent to the model."""

    def __init__(self, cfg: EmbedderConfig, cache_path: str | Path) -> None:
        self.cfg = cfg
        self.kind: EmbedderKind[Any] = EMBEDDERS.get(cfg.backend, key="embedder.backend")
        ident = {"name": cfg.name, **self.kind.identity(cfg)}
        self.model_key = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]
        self.db = sqlite3.connect(str(cache_path), timeout=60.0, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA busy_timeout=60000")
        self.db.execute("CREATE TABLE IF NOT EXISTS embeddings (model TEXT, text TEXT, vec BLOB, PRIMARY KEY (model, text))")
        self._encode: Encode | None = None
        self.calls = 0
        self.hits = 0
        self._memo: dict[str, np.ndarray] = {}

    def _encoded(self, texts: list[str]) -> np.ndarray:
        if self._encode is None:
            self._encode = self.kind.load(self.cfg)
        vecs = np.asarray(self._encode(texts), dtype=np.float64)
        # a plug-in's vectors are checked, not trusted: the coders read cosines as dot products
        if vecs.ndim != 2 or vecs.shape[0] != len(texts):
            raise BackendError(f"embedder {self.cfg.backend!r} returned an array of shape {vecs.shape} for "
                               f"{len(texts)} texts", key="embedder.backend", hint="it must give one row per text")
        norms = np.linalg.norm(vecs, axis=1)
        if not np.all(np.isfinite(vecs)) or np.any(np.abs(norms - 1.0) > 1e-3):
            raise BackendError(f"embedder {self.cfg.backend!r} returned rows that are not of unit length "
                               f"(norms {norms.min():.4g}..{norms.max():.4g})", key="embedder.backend",
                               hint="an embedder kind gives L2-normalised, finite rows")
        return vecs

    def embed(self, texts: list[str], *, compute: bool = True) -> np.ndarray:
        """Embeddings of `texts` (rows); with `compute=False` only from the cache, and a
        text that is not cached is an error (re-rendering a report makes no model call)."""
        uniq = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if uniq:
            for start in range(0, len(uniq), 500):
                chunk = uniq[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for text, blob in self.db.execute(
                        f"SELECT text, vec FROM embeddings WHERE model = ? AND text IN ({marks})", [self.model_key, *chunk]):
                    self._memo[text] = np.frombuffer(blob, dtype=np.float32).astype(np.float64)
                    self.hits += 1
            missing = [t for t in uniq if t not in self._memo]
            if missing and not compute:
                from biasaudit.errors import StoreError

                raise StoreError(f"{len(missing)} embeddings are not in the store", key="runtime.cache",
                                 hint="run `biasaudit run` with the same spec to fill the cache")
            if missing:
                vecs = self._encoded(missing)
                self.calls += len(missing)
                self.db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                                    [(self.model_key, t, np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(missing, vecs, strict=True)])
                for t, v in zip(missing, vecs, strict=True):
                    self._memo[t] = np.asarray(v, dtype=np.float32).astype(np.float64)
        return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, 0))

    def close(self) -> None:
        self.db.close()


__all__ = ["EMBEDDERS", "Embedder", "EmbedderKind", "Encode"]
