"""Build backends from model configs and check what they can do."""

from __future__ import annotations

import json
from typing import Any

from ..errors import BackendError
from ..spec import ModelConfig, RuntimeConfig
from .base import BACKENDS, Backend

# Local models loaded in this process, so a sweep or a test session loads each once.
_LOADED: dict[str, Backend] = {}


def check_probe_support(model: ModelConfig, kind: str, model_file: str | None = None) -> None:
    bk = BACKENDS.get(model.backend, file=model_file, key="model.backend")
    if kind not in bk.supports:
        local = {"pseudo_loglik": "use a local masked LM (hf_masked)"}.get(kind, "choose another model config")
        raise BackendError(
            f"model backend {model.backend!r} cannot give {kind}",
            file=model_file,
            key="probe.kind",
            hint=f"it supports {', '.join(sorted(bk.supports))}; {local}",
        )


def backend_identity(model: ModelConfig) -> dict[str, Any]:
    return BACKENDS.get(model.backend, key="model.backend").identity(model)


def build_backend(model: ModelConfig, runtime: RuntimeConfig) -> Backend:
    kind = BACKENDS.get(model.backend, key="model.backend")
    if not kind.local or model.backend in ("scripted", "replay"):
        return kind.build(model, runtime)
    memo = json.dumps([model.model_dump(mode="json"), runtime.threads], sort_keys=True)
    if memo not in _LOADED:
        _LOADED[memo] = kind.build(model, runtime)
    backend = _LOADED[memo]
    if hasattr(backend, "batch_size"):
        backend.batch_size = runtime.batch_size
    return backend


def unload_all() -> None:
    _LOADED.clear()
