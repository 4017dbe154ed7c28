"""The slice of the cache a run's report is computed from, as JSON lines in the pack, and
back into a fresh cache for `verify`.

A cache is shared by many runs, so a pack holds only the rows this run reads: its
subject responses (the plan's request keys), the coding answers and embeddings its coding
layers read (recorded while the pack re-computes the run offline) and the newest stored
calibration of each model-backed layer. `verify` builds a new SQLite cache from these lines
(it never opens an SQLite file from the pack) and re-renders the run from it."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from biasaudit._util.trail import json_lines, json_records
from biasaudit.coding.base import CodingRequest, LayerCalls
from biasaudit.coding.calibration_record import coder_key, model_backed
from biasaudit.coding.routes import StoreAnswerer, route_identity
from biasaudit.errors import BiasAuditError
from biasaudit.records.responses import Response
from biasaudit.runner.pipeline import Prepared
from biasaudit.store import Store

RESPONSE_FIELDS = ("key", "kind", "request", "status", "output", "error", "error_kind", "attempts", "latency_s")


@dataclass
class RecordingAnswerer(StoreAnswerer):
    """The offline coding answerer, noting every stored answer and embedding it reads."""

    keys: set[str] = field(default_factory=set)
    texts: dict[str, set[str]] = field(default_factory=dict)
    """Embedder model key -> texts embedded."""

    def __call__(self, layer: str, wanted: list[CodingRequest]) -> dict[CodingRequest, Response]:
        self.keys.update(self.key(route_identity(self.cfg, r.route), r) for r in wanted if r.route != "embedder")
        return super().__call__(layer, wanted)

    def _embed(self, reqs: list[CodingRequest], counts: LayerCalls) -> dict[CodingRequest, Response]:
        out = super()._embed(reqs, counts)
        self.texts.setdefault(self._embedder.model_key, set()).update(r.text or "" for r in reqs)
        return out


class PackedEmbedder:
    """Embeddings served from the pack's lines (the embedder model is not needed)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.calls = 0
        self.hits = 0

    def embed(self, texts: list[str], *, compute: bool = True) -> np.ndarray:
        missing = [t for t in texts if t not in self.vectors]
        if missing:
            raise BiasAuditError(f"{len(missing)} embeddings are not in the pack", key="store/embeddings.jsonl")
        self.hits += len(set(texts))
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, 0))

    def close(self) -> None:
        pass


@dataclass
class PackedAnswerer(StoreAnswerer):
    """The offline coding answerer of `verify`: stored answers from the cache rebuilt from
    the pack, embeddings from the pack's lines."""

    vectors: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # never the embedder model: its path comes from the pack's config
        self._embedder = PackedEmbedder(self.vectors)


def _lines(rows: Iterable[dict[str, Any]]) -> str:
    return json_lines(rows, sort_keys=True)


def export_responses(cache: Path, keys: Iterable[str]) -> str:
    """The stored rows of `keys`, sorted by key, as JSON lines (request and output stay the
    canonical JSON text the cache holds)."""
    store = Store(cache, readonly=True)  # any earlier cache layout (store/schema.py)
    db = store.db
    try:
        rows = []
        ordered = sorted(set(keys))
        for start in range(0, len(ordered), 500):
            chunk = ordered[start:start + 500]
            q = f"SELECT {', '.join(RESPONSE_FIELDS)} FROM responses WHERE key IN ({','.join('?' * len(chunk))})"
            rows += [dict(zip(RESPONSE_FIELDS, r, strict=True)) for r in db.execute(q, chunk)]
    finally:
        store.close()
    return _lines(sorted(rows, key=lambda r: r["key"]))


def export_embeddings(cache: Path, texts: dict[str, set[str]]) -> str:
    if not texts:
        return ""
    store = Store(cache, readonly=True)
    db = store.db
    rows = []
    try:
        for model, wanted in sorted(texts.items()):
            for t in sorted(wanted):
                r = db.execute("SELECT vec FROM embeddings WHERE model = ? AND text = ?", (model, t)).fetchone()
                if r is not None:
                    rows.append({"model": model, "text": t, "vec": base64.b64encode(r[0]).decode("ascii")})
    finally:
        store.close()
    return _lines(rows)


def export_calibrations(prep: Prepared) -> str:
    """The newest stored calibration of each model-backed layer (what the run's guard read)."""
    cfg = prep.composed.config
    layers = [lay for lay in prep.coding.layers.values() if model_backed(lay)]
    if not layers:
        return ""
    store = Store(cfg.runtime.cache, readonly=True)
    rows = []
    try:
        for lay in layers:
            key = coder_key(cfg, lay)
            found = store.last_calibration(key)
            if found is not None:
                result = {k: v for k, v in found.items() if k not in ("recorded", "passed")}
                rows.append({"key": key, "layer": lay.name, "passed": bool(found["passed"]), "result": result})
    finally:
        store.close()
    return _lines(rows)


class PackDataError(BiasAuditError):
    """A line of the pack's store slice is not what `pack` writes."""


def _json_lines(data: bytes, name: str) -> list[dict[str, Any]]:
    return [row for _, row in json_records(data, file=name, error=PackDataError)]


def import_store(folder: Path, cache: Path) -> dict[str, np.ndarray]:
    """A new cache at `cache` holding the pack's store slice (folder: the run's `store/`);
    returns the packed embeddings by text."""
    store = Store(cache)
    try:
        rows = _json_lines(_read(folder / "responses.jsonl"), "store/responses.jsonl")
        for i, r in enumerate(rows, 1):
            ok = (isinstance(r.get("key"), str) and isinstance(r.get("request"), str) and r.get("status") in ("ok", "failed")
                  and (r.get("output") is None or isinstance(r.get("output"), str)))
            if not ok:
                raise PackDataError(f"line {i} is not a stored response", file="store/responses.jsonl")
            vals = [r.get(k) for k in RESPONSE_FIELDS]
            store.db.execute(f"INSERT OR REPLACE INTO responses ({', '.join(RESPONSE_FIELDS)}, created) "
                             f"VALUES ({', '.join('?' * len(RESPONSE_FIELDS))}, 0)",
                             [v if isinstance(v, (str, int, float)) or v is None else json.dumps(v) for v in vals])
        for i, r in enumerate(_json_lines(_read(folder / "calibrations.jsonl"), "store/calibrations.jsonl"), 1):
            if not (isinstance(r.get("key"), str) and isinstance(r.get("result"), dict)):
                raise PackDataError(f"line {i} is not a stored calibration", file="store/calibrations.jsonl")
            store.record_calibration(r["key"], str(r.get("layer", "")), bool(r.get("passed")), r["result"])
    finally:
        store.close()
    vectors: dict[str, np.ndarray] = {}
    for i, r in enumerate(_json_lines(_read(folder / "embeddings.jsonl"), "store/embeddings.jsonl"), 1):
        try:
            vectors[str(r["text"])] = np.frombuffer(base64.b64decode(r["vec"], validate=True),
                                                    dtype=np.float32).astype(np.float64)
        except (KeyError, ValueError, TypeError):
            raise PackDataError(f"line {i} is not a stored embedding", file="store/embeddings.jsonl") from None
    return vectors


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except UnicodeDecodeError:
        raise PackDataError("not UTF-8 text", file=path.name) from None
