"""Sentence embeddings (the `embedder` group) with a content-addressed cache in the store:
a string is embedded once per embedder, whatever run or metric setting asks again."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from biasaudit.backends.base import resolve_model_path
from biasaudit.backends.devices import pick_device
from biasaudit.backends.identity import directory_digest
from biasaudit.errors import BackendError
from biasaudit.spec import EmbedderConfig

log = logging.getLogger(__name__)


class Embedder:
    """L2-normalised embeddings; `calls` counts strings actually sent to the model."""

    def __init__(self, cfg: EmbedderConfig, cache_path: str | Path) -> None:
        if cfg.backend != "sentence_transformers":
            raise BackendError(f"unknown embedder backend {cfg.backend!r}", key="embedder.backend",
                               hint="use sentence_transformers")
        self.cfg = cfg
        where = resolve_model_path(cfg.path, key="embedder.path")
        self.where = where
        ident = {"name": cfg.name, "dir": directory_digest(where) if isinstance(where, Path) else str(where)}
        self.model_key = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]
        self.db = sqlite3.connect(str(cache_path), timeout=60.0, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA busy_timeout=60000")
        self.db.execute("CREATE TABLE IF NOT EXISTS embeddings (model TEXT, text TEXT, vec BLOB, PRIMARY KEY (model, text))")
        self._model: Any = None
        self.calls = 0
        self.hits = 0
        self._memo: dict[str, np.ndarray] = {}

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.where), device=pick_device(self.cfg.device))
        return self._model

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
                vecs = self._load().encode(missing, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                           show_progress_bar=False)
                self.calls += len(missing)
                self.db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                                    [(self.model_key, t, np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(missing, vecs, strict=True)])
                for t, v in zip(missing, vecs, strict=True):
                    self._memo[t] = np.asarray(v, dtype=np.float32).astype(np.float64)
        return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, 0))

    def close(self) -> None:
        self.db.close()
