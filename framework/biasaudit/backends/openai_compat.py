"""`openai_compat`: any OpenAI-compatible HTTP server (vLLM, llama.cpp, Ollama, hosted).

Chat completions for `generate` and `next_token` (from `top_logprobs`), legacy
completions with `echo` for `sequence_logprob` where the server offers it. The API key
comes from the environment variable named in `api_key_env`; it is sent in a header and
never stored, logged or put in an error message. Retries back off exponentially and
honour `Retry-After`; a concurrency limit bounds requests in flight.
"""

from __future__ import annotations

import email.utils
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import httpx

from ..errors import BackendError
from ..plan import Request
from ..spec import ModelConfig, RuntimeConfig
from .base import BACKENDS, BackendKind, Emit, Response

log = logging.getLogger(__name__)

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
MAX_BACKOFF_S = 60.0


class TransientError(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class PermanentError(Exception):
    pass


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAICompatBackend:
    supports = frozenset({"generate", "next_token", "sequence_logprob", "choice"})

    def __init__(self, cfg: ModelConfig, runtime: RuntimeConfig, *, backoff_base: float = 0.5) -> None:
        if not cfg.base_url:
            raise BackendError("openai_compat needs `model.base_url`", key="model.base_url")
        self.cfg = cfg
        headers = {"Content-Type": "application/json"}
        if cfg.api_key_env:
            key = os.environ.get(cfg.api_key_env)
            if key is None:
                raise BackendError(
                    f"environment variable {cfg.api_key_env} is not set",
                    key="model.api_key_env",
                    hint=f"export {cfg.api_key_env}=... (the key is never written anywhere)",
                )
            headers["Authorization"] = f"Bearer {key}"
        self.client = httpx.Client(
            base_url=cfg.base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(cfg.timeout),
            limits=httpx.Limits(max_connections=cfg.concurrency, max_keepalive_connections=cfg.concurrency),
        )
        self.backoff_base = backoff_base
        self.sleep = time.sleep
        self._lock = threading.Lock()
        self.http_calls = 0

    # -- one HTTP exchange with retries -------------------------------------------
    def _post(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        attempt = 0
        while True:
            attempt += 1
            try:
                with self._lock:
                    self.http_calls += 1
                r = self.client.post(path, json=body)
                if r.status_code in RETRY_STATUS:
                    raise TransientError(f"HTTP {r.status_code}", parse_retry_after(r.headers.get("Retry-After")))
                if r.status_code >= 400:
                    raise PermanentError(f"HTTP {r.status_code}: {r.text[:200]}")
                try:
                    data = r.json()
                except ValueError:
                    raise TransientError("malformed JSON in response") from None
                if not isinstance(data, dict):
                    raise TransientError("response is not a JSON object")
                return data, attempt
            except httpx.TimeoutException:
                err: TransientError = TransientError("timeout")
            except httpx.TransportError as exc:
                err = TransientError(f"connection error: {type(exc).__name__}")
            except TransientError as exc:
                err = exc
            if attempt > self.cfg.max_retries:
                raise PermanentError(f"{err.reason} (after {attempt} attempts)")
            wait = err.retry_after
            if wait is None:
                wait = self.backoff_base * (2 ** (attempt - 1)) * (1 + random.random() * 0.25)
            self.sleep(min(wait, MAX_BACKOFF_S))

    # -- probe kinds ---------------------------------------------------------------
    def _answer(self, req: Request) -> Response:
        t0 = time.perf_counter()
        p = req.params
        try:
            if req.kind == "generate":
                body: dict[str, Any] = {
                    "model": self.cfg.model, "messages": req.messages,
                    "temperature": p.get("temperature", 0.0), "top_p": p.get("top_p", 1.0),
                    "max_tokens": p.get("max_tokens", 128),
                }
                if "seed" in p:
                    body["seed"] = int(p["seed"]) + req.sample
                data, attempts = self._post("chat/completions", body)
                output = _parse_chat(data)
            elif req.kind == "next_token":
                body = {
                    "model": self.cfg.model, "messages": req.messages, "max_tokens": 1,
                    "temperature": 0.0, "logprobs": True, "top_logprobs": min(int(p.get("top_k", 20)), 20),
                }
                data, attempts = self._post("chat/completions", body)
                output = _parse_top_logprobs(data)
            elif req.kind == "choice":
                body = {
                    "model": self.cfg.model, "messages": req.messages, "max_tokens": 1,
                    "temperature": 0.0, "logprobs": True, "top_logprobs": 20,
                }
                data, attempts = self._post("chat/completions", body)
                output = _parse_choice(data, [str(w) for w in p.get("choices", [])])
            elif req.kind == "sequence_logprob":
                body = {"model": self.cfg.model, "prompt": req.text, "max_tokens": 0,
                        "echo": True, "logprobs": 0, "temperature": 0.0}
                data, attempts = self._post("completions", body)
                output = _parse_echo(data, req.text or "")
            else:
                raise PermanentError(f"openai_compat cannot do {req.kind}")
        except PermanentError as exc:
            return Response(key=req.key, status="failed", error=str(exc), latency_s=time.perf_counter() - t0)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            return Response(key=req.key, status="failed", error=f"malformed output: {type(exc).__name__}: {exc}"[:300],
                            latency_s=time.perf_counter() - t0)
        return Response(key=req.key, status="ok", output=output, latency_s=time.perf_counter() - t0, attempts=attempts)

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        with ThreadPoolExecutor(max_workers=self.cfg.concurrency) as pool:
            futures = [pool.submit(self._answer, r) for r in requests]
            for fut in as_completed(futures):
                emit(fut.result())

    def close(self) -> None:
        self.client.close()


def _parse_chat(data: dict[str, Any]) -> dict[str, Any]:
    choice = data["choices"][0]
    text = choice["message"].get("content")
    finish = choice.get("finish_reason")
    if text is None:
        if finish == "content_filter":
            return {"text": "", "finish_reason": "content_filter", "refusal": True, "output_tokens": 0}
        raise ValueError("empty content")
    usage = data.get("usage") or {}
    return {"text": text, "finish_reason": finish,
            "output_tokens": usage.get("completion_tokens", len(text.split()))}


def _parse_top_logprobs(data: dict[str, Any]) -> dict[str, Any]:
    content = data["choices"][0]["logprobs"]["content"]
    if not content:
        raise ValueError("no logprobs returned")
    top = content[0]["top_logprobs"]
    return {"top": [[t["token"], float(t["logprob"])] for t in top]}


def _parse_choice(data: dict[str, Any], words: list[str]) -> dict[str, Any]:
    """Multiple choice from the first token's top log-probs: each answer word takes the
    best log-prob of a returned token that starts it; words not returned are absent."""
    import math

    top = _parse_top_logprobs(data)["top"]
    lps: dict[str, float] = {}
    for tok, lp in top:
        t = tok.strip().lower()
        for w in words:
            if t and w.lower().startswith(t) and lp > lps.get(w, -math.inf):
                lps[w] = lp
    if not lps:
        raise ValueError("none of the answer words is among the returned top log-probs")
    best = max(lps.values())
    z = sum(math.exp(v - best) for v in lps.values())
    probs = {w: math.exp(lps[w] - best) / z if w in lps else 0.0 for w in words}
    return {"probs": probs, "logprobs": lps, "choice": max(probs, key=lambda w: probs[w])}


def _parse_echo(data: dict[str, Any], text: str) -> dict[str, Any]:
    lp = data["choices"][0]["logprobs"]
    tokens, lps, offs = lp["tokens"], lp["token_logprobs"], lp["text_offset"]
    if not (len(tokens) == len(lps) == len(offs)):
        raise ValueError("logprob arrays differ in length")
    ends = [*offs[1:], len(text)]
    return {"tokens": tokens, "token_ids": list(range(len(tokens))),
            "logprobs": lps, "offsets": [[s, e] for s, e in zip(offs, ends, strict=True)]}


def _identity(cfg: ModelConfig) -> dict[str, Any]:
    return {"backend": "openai_compat", "base_url": cfg.base_url, "model": cfg.model}


BACKENDS.add(
    "openai_compat",
    BackendKind(
        supports=OpenAICompatBackend.supports,
        identity=_identity,
        build=lambda cfg, rt: OpenAICompatBackend(cfg, rt),
        local=False,
    ),
)
