"""`openai_compat`: any OpenAI-compatible HTTP server (vLLM, llama.cpp, Ollama, hosted).

Chat completions for `generate`, `next_token` and `choice` (from `top_logprobs`), legacy
completions with `echo` for `sequence_logprob` where the server offers it.

Requests go out concurrently on one asyncio loop per `execute` call (httpx.AsyncClient),
run on a helper thread while the caller's thread stores each response (and takes Ctrl-C,
which then cancels the loop's tasks cleanly), under an adaptive concurrency limit (halved on 429, grown by one per window of
successes, between `min_concurrency` and `concurrency`) and the host's rate limits
(`requests_per_s`, `tokens_per_min`). Each response is handed to `emit` as soon as it
completes, so the store commits it at once and a killed run loses only calls in flight.

Transient faults (429, 5xx, timeouts, connection errors, truncated JSON) are retried at
most `max_retries` times, with exponential backoff or the server's `Retry-After`; what
the model sent back but cannot be used (empty content, a content filter, malformed
structure, bad log-probs) and other 4xx are failures at once. Every failure is stored
with its kind. The API key comes from the environment variable named in `api_key_env`;
it is sent in a header and never stored, logged, shown in a repr or an error message.

A server is not trusted either: `timeout` bounds each attempt as a whole (a server that
drips one byte a second does not hold a slot forever), the body is read up to
`runtime.limits.http_response_bytes` after decompression (a gzip bomb stops at the
limit), redirects are not followed (the key goes to `base_url` only), and a body whose
JSON or `usage` is unusable is a `malformed` failure, counted like any other.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import ssl
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from biasaudit._util.secrets import redact, watch_key
from biasaudit.backends.base import BACKENDS, BackendKind, Emit, Response
from biasaudit.backends.event_loop import emit_from_loop
from biasaudit.backends.http_limits import AIMDController, ConcurrencyGate, host_limiter
from biasaudit.backends.http_scoring import Conditioning, align, first_logprob, output, text_tokens
from biasaudit.backends.openai_parse import (
    OutputFault,
    echo_arrays,
    next_token_dist,
    parse_chat,
    parse_choice,
    parse_top_logprobs,
    reported_usage,
    usage_tokens,
)
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.spec import OpenAICompatConfig, RuntimeConfig

log = logging.getLogger(__name__)
# httpx logs one INFO line per request; the progress bar is the output, and a failure is
# recorded with its reason.
logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("httpcore").setLevel(logging.WARNING)

# Servers named by `owned_by` in GET /models, whose scoring quirks are known.
_SERVERS = {"me": "llama-cpp-python", "vllm": "vllm", "llamacpp": "llama.cpp"}
# llama-cpp-python lists the whole vocabulary for the next token when asked (the first
# echoed token's log-prob is only there); other servers cap what they list.
_FULL_VOCAB = 262144
_PROBE_TEXT = "Hello world"

FAILURE_KINDS = ("rate_limited", "server_error", "connection", "timeout", "malformed", "empty",
                 "content_filter", "bad_logprobs", "http_error", "unsupported")
"""Why a request failed, as stored with the failure (`Response.error_kind`)."""


class AttemptFault(Exception):
    """One HTTP attempt went wrong; `retry` says whether another attempt may help."""

    def __init__(self, kind: str, reason: str, *, retry: bool, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.retry = retry
        self.retry_after = retry_after


class RequestFailed(Exception):
    def __init__(self, kind: str, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.attempts = attempts


class _Secret:
    """Holds the API key so that no repr, log line or traceback local shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__


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


def classify_status(status: int, body: str, retry_after: float | None) -> AttemptFault:
    """The fault an HTTP error status stands for, and whether to try again."""
    if status == 429:
        return AttemptFault("rate_limited", "HTTP 429", retry=True, retry_after=retry_after)
    if status == 408:
        return AttemptFault("timeout", "HTTP 408", retry=True, retry_after=retry_after)
    if status >= 500 or status == 409:
        # what the server says went wrong (a server that cannot score prompts says so here)
        said = _error_message(body)
        return AttemptFault("server_error", f"HTTP {status}" + (f": {said}" if said else ""), retry=True,
                            retry_after=retry_after)
    if "content_filter" in body:  # Azure OpenAI refuses filtered prompts with 400 + code content_filter
        return AttemptFault("content_filter", f"HTTP {status}: prompt blocked by the server's content filter", retry=False)
    return AttemptFault("http_error", f"HTTP {status}: {body[:200]}", retry=False)


def _error_message(body: str) -> str:
    """The `error.message` of an OpenAI-style error body, short; else nothing."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    if isinstance(data, list) and data:  # Google's endpoints send [{"error": {...}}]
        data = data[0]
    err = data.get("error") if isinstance(data, dict) else None
    msg = err.get("message") if isinstance(err, dict) else err if isinstance(err, str) else None
    return " ".join(str(msg).split())[:160] if msg else ""


def estimate_tokens(req: Request, max_tokens: int) -> float:
    """Tokens a request will use before the server says: ~4 characters per prompt token,
    plus the completion budget."""
    chars = len(req.text or "") + sum(len(str(m.get("content", ""))) for m in req.messages or [])
    return chars / 4.0 + max_tokens


class OpenAICompatBackend:
    supports = frozenset({"generate", "next_token", "sequence_logprob", "choice"})
    _redirect_note = "requests and the API key go to model.base_url only"

    def __init__(
        self, cfg: OpenAICompatConfig, runtime: RuntimeConfig, *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        tokenizer: Any = None,
        server: str | None = None,
    ) -> None:
        if not cfg.base_url or urlsplit(cfg.base_url).scheme not in ("http", "https"):
            raise BackendError(f"openai_compat needs an http(s) `model.base_url`, got {cfg.base_url!r}",
                               key="model.base_url", hint="e.g. http://127.0.0.1:8000/v1")
        self.cfg = cfg
        self._key: _Secret | None = None
        self._key_missing = False
        if cfg.api_key_env:
            key = os.environ.get(cfg.api_key_env)
            if key is None:
                # a keyless local server needs none; one that wants a key answers 401 and
                # the failure names the variable
                self._key_missing = True
                log.warning("environment variable %s is not set: requests go to %s without an API key "
                            "(model.api_key_env=null for a keyless server silences this)", cfg.api_key_env,
                            cfg.base_url)
            else:
                self._key = _Secret(key)
                watch_key(cfg.api_key_env, key)  # scrubbed, in every encoding, from whatever is written
        self.tokenizer = tokenizer
        self.server = server
        self._cond: Conditioning | None = None
        self._scoring_refused: tuple[str, str] | None = None
        self._first_dists: dict[str, asyncio.Future[dict[str, float]]] = {}
        self._capped_warned = False
        self.runtime = runtime
        self.controller = AIMDController(cfg.min_concurrency, cfg.concurrency)
        self.limiter = host_limiter(urlsplit(cfg.base_url).netloc, cfg.api_key_env,
                                    cfg.requests_per_s, cfg.tokens_per_min)
        self.clock = clock
        self.sleep = sleep
        self.rng = random.Random()
        self.http_calls = 0
        self._ssl: ssl.SSLContext | None = None

    def __repr__(self) -> str:
        return f"OpenAICompatBackend(base_url={self.cfg.base_url!r}, model={self.cfg.model!r})"

    def _redact(self, text: str) -> str:
        # a key too short or plain to scrub (secrets.too_plain) is left in: replacing it
        # would rewrite ordinary words ("none of the answer words"); watch_key warned
        return redact(text)

    def _client(self) -> httpx.AsyncClient:
        """One client per concurrency slot, each with a single keep-alive connection:
        httpcore 1.0's pool spends time quadratic in its size on every request (encode/
        httpcore#1035), which at 32 connections costs more CPU than the requests."""
        headers = self._default_headers()
        if self._ssl is None:  # loading the CA bundle takes ~60 ms: once, not per client
            self._ssl = httpx.create_ssl_context()
        return httpx.AsyncClient(
            base_url=self.cfg.base_url.rstrip("/") + "/",  # type: ignore[union-attr]
            headers=headers,
            timeout=httpx.Timeout(self.cfg.timeout),
            follow_redirects=False,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            verify=self._ssl,
        )

    def _default_headers(self) -> dict[str, str]:
        """Headers of every request (an application backend sends its own key header)."""
        # only encodings `_read_body` decodes within the size limit
        headers = {"Content-Type": "application/json", "Accept-Encoding": "gzip, deflate"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        return headers

    # -- one request, attempt by attempt ------------------------------------------------
    async def _attempt(self, client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._send(client, "POST", path, json=body)

    async def _send(self, client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        """One HTTP attempt, its body bounded, its status classified, a redirect refused;
        the JSON object it returned (`kwargs`: httpx's json, data, headers)."""
        self.http_calls += 1
        try:
            # the whole attempt (connect, send, headers, body) within `timeout` seconds
            async with asyncio.timeout(self.cfg.timeout):
                async with client.stream(method, url, **kwargs) as r:
                    raw = await self._read_body(r)
        except (TimeoutError, httpx.TimeoutException):
            raise AttemptFault("timeout", f"no complete response within {self.cfg.timeout:g} s", retry=True) from None
        except httpx.RequestError as exc:  # transport errors: refused, reset, closed mid-response
            raise AttemptFault("connection", f"connection error: {type(exc).__name__}", retry=True) from None
        text = raw.decode("utf-8", errors="replace")
        if 300 <= r.status_code < 400:
            where = urlsplit(r.headers.get("Location", "")).netloc or "elsewhere"
            raise AttemptFault("http_error", f"HTTP {r.status_code}: redirect to {where[:80]} not followed "
                                             f"({self._redirect_note})", retry=False)
        if r.status_code >= 400:
            fault = classify_status(r.status_code, self._redact(text), parse_retry_after(r.headers.get("Retry-After")))
            if r.status_code in (401, 403) and self._key_missing:
                fault.reason = f"{fault.reason[:120]} (no API key sent: environment variable {self.cfg.api_key_env} is not set)"
            raise fault
        try:
            data = json.loads(text)
        except ValueError:
            raise AttemptFault("malformed", "truncated or invalid JSON in the response", retry=True) from None
        except RecursionError:
            raise AttemptFault("malformed", "JSON in the response is nested too deeply", retry=False) from None
        if not isinstance(data, dict):
            raise AttemptFault("malformed", "response is not a JSON object", retry=True)
        return data

    async def _read_body(self, r: httpx.Response) -> bytes:
        """The body, decompressed here rather than by httpx so that a few compressed bytes
        cannot expand past the limit (zlib's `max_length` stops each step at it)."""
        limit = self.runtime.limits.http_response_bytes
        enc = r.headers.get("Content-Encoding", "identity").strip().lower()
        if enc not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise AttemptFault("malformed", f"unsupported Content-Encoding {enc[:40]!r}", retry=False)
        dec = zlib.decompressobj(wbits=47) if enc not in ("", "identity") else None  # 47: gzip or zlib header
        too_big = AttemptFault("malformed", f"response body larger than {limit} bytes "
                                            "(runtime.limits.http_response_bytes)", retry=False)
        out = bytearray()
        try:
            async for chunk in r.aiter_raw():
                if dec is not None:
                    chunk = dec.decompress(chunk, limit + 1 - len(out))
                    if dec.unconsumed_tail:
                        raise too_big
                out += chunk
                if len(out) > limit:
                    raise too_big
            if dec is not None:
                out += dec.flush()
        except zlib.error:
            raise AttemptFault("malformed", f"undecodable {enc} response body", retry=True) from None
        if len(out) > limit:
            raise too_big
        return bytes(out)

    async def _post(self, pool: _Clients, path: str, body: dict[str, Any], est: float) -> tuple[dict[str, Any], int]:
        attempt = 0
        while True:
            attempt += 1
            epoch = await pool.gate.acquire()
            client = pool.take()
            try:
                wait = self.limiter.reserve(est, self.clock())
                if wait > 0:
                    await self.sleep(wait)
                data = await self._attempt(client, path, body)
            except AttemptFault as fault:
                err = fault
            else:
                self.controller.on_success()
                used = usage_tokens(data)  # an unusable `usage` is a malformed answer (OutputFault)
                self.limiter.correct(est, est if used is None else used, self.clock())
                return data, attempt
            finally:
                pool.give_back(client)
                await pool.gate.release()
            if err.kind == "rate_limited":
                if self.controller.on_overload(epoch):
                    log.info("429 from %s: concurrency limit now %d", self.cfg.base_url, self.controller.limit)
                if err.retry_after is not None:
                    self.limiter.pause(min(err.retry_after, self.cfg.max_backoff_s), self.clock())
            if not err.retry or attempt > self.cfg.max_retries:
                raise RequestFailed(err.kind, err.reason, attempt)
            delay = err.retry_after
            if delay is None:
                delay = self.cfg.backoff_s * 2 ** (attempt - 1) * (1 + 0.25 * self.rng.random())
            await self.sleep(min(delay, self.cfg.max_backoff_s))

    def _messages(self, req: Request) -> list[dict[str, Any]]:
        """A variant's standing system prompt goes first, as in-process, unless the
        request brings its own system message."""
        msgs = list(req.messages or [])
        if self.cfg.system_prompt and not any(m.get("role") == "system" for m in msgs):
            msgs = [{"role": "system", "content": self.cfg.system_prompt}, *msgs]
        return msgs

    def _top_k(self, req: Request) -> int:
        asked = _top_k_asked(req)
        if asked > self.cfg.max_top_logprobs and not self._capped_warned:
            self._capped_warned = True
            log.warning("top_k %d is above what the server returns (model.max_top_logprobs %d): capped to %d",
                        asked, self.cfg.max_top_logprobs, self.cfg.max_top_logprobs)
        return min(asked, self.cfg.max_top_logprobs)

    def _body(self, req: Request) -> tuple[str, dict[str, Any], int]:
        p = req.decoding()
        chat: dict[str, Any] = {"model": self.cfg.model, "messages": self._messages(req)}
        if self.cfg.reasoning_effort is not None:
            chat["reasoning_effort"] = self.cfg.reasoning_effort
        if req.kind == "generate":
            body = {**chat, "temperature": p.temperature if p.temperature is not None else 0.0,
                    "top_p": p.top_p if p.top_p is not None else 1.0,
                    "max_tokens": p.max_tokens if p.max_tokens is not None else 128}
            if p.seed is not None:
                body["seed"] = p.seed + req.sample
            if self.server == "llama-cpp-python":
                # its defaults (repeat penalty 1.1, top-k 40, min-p 0.05) would sample from another
                # distribution than in-process, and make even greedy answers differ
                body.update(repeat_penalty=1.0, top_k=0, min_p=0.0)
            return "chat/completions", body, int(body["max_tokens"])
        if req.kind in ("next_token", "choice"):
            top = self._top_k(req) if req.kind == "next_token" else min(20, self.cfg.max_top_logprobs)
            return "chat/completions", {**chat, "max_tokens": 1, "temperature": 0.0, "logprobs": True,
                                        "top_logprobs": top}, 1
        if req.kind == "sequence_logprob":
            assert self._cond is not None
            return "completions", self._echo_body(self._cond.sent(req.text or "")), 1
        raise RequestFailed("unsupported", f"openai_compat cannot do {req.kind}", 0)

    def _echo_body(self, prompt: str) -> dict[str, Any]:
        # max_tokens 1, not 0: llama.cpp reads 0 as "until the context is full"; the one
        # generated token is dropped when the echo is read
        body: dict[str, Any] = {"model": self.cfg.model, "prompt": prompt, "max_tokens": 1, "echo": True,
                                "logprobs": 0, "temperature": 0.0}
        if self.server == "vllm":
            body["prompt_logprobs"] = 0  # vLLM then names each prompt token's id
        return body

    def _parse(self, req: Request, data: dict[str, Any]) -> JSONObject:
        if req.kind == "generate":
            return parse_chat(data)
        if req.kind == "next_token":
            out = parse_top_logprobs(data)
            asked = _top_k_asked(req)
            if asked > self.cfg.max_top_logprobs:
                out["top_k_capped_to"] = self.cfg.max_top_logprobs
            return out
        return parse_choice(data, req.decoding().choices)

    # -- scoring: the same tokens under the same conditioning as in-process ------------
    def _root(self) -> str:
        """The server's root URL (its non-OpenAI routes live there, not under /v1)."""
        base = (self.cfg.base_url or "").rstrip("/")
        return base[: -len("/v1")] if base.endswith("/v1") else base

    async def _get_json(self, pool: _Clients, url: str) -> Any:
        client = pool.take()
        try:
            async with asyncio.timeout(self.cfg.timeout):
                r = await client.get(url)
            if r.status_code != 200 or len(r.content) > self.runtime.limits.http_response_bytes:
                return None
            return r.json()
        except (TimeoutError, httpx.HTTPError, ValueError):
            return None
        finally:
            pool.give_back(client)

    async def _which_server(self, pool: _Clients) -> str:
        data = await self._get_json(pool, "models")
        rows = data.get("data") if isinstance(data, dict) else None
        owner = rows[0].get("owned_by") if isinstance(rows, list) and rows and isinstance(rows[0], dict) else None
        return _SERVERS.get(str(owner), "unknown")

    def _local_bos(self) -> tuple[str | None, int | None]:
        """The BOS the in-process backend puts first (its EOS where it has none)."""
        tok = self.tokenizer
        if tok is None:
            return None, None
        if tok.bos_token_id is not None:
            return str(tok.bos_token), int(tok.bos_token_id)
        return str(tok.eos_token), int(tok.eos_token_id)

    async def _probe_echo(self, pool: _Clients, sent: str, bos_sent: str) -> tuple[list[Any], int | None]:
        data, _ = await self._post(pool, "completions", self._echo_body(sent), 1.0)
        tokens, lps, _ids = echo_arrays(data)
        usage = data.get("usage")
        counted = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        prompt_tokens = counted if isinstance(counted, int) else None
        return align(tokens, lps, sent, bos_sent), prompt_tokens

    async def _conditioning(self, pool: _Clients) -> Conditioning:
        """Decide once how a scored text is sent: a probe shows whether the server puts a
        BOS first (shown as a first token, or counted in `usage` but hidden); if not, the
        BOS text is sent and a second probe checks it was read as one special token."""
        prefix = self.cfg.system_prompt + "\n" if self.cfg.system_prompt else ""
        local_bos, _ = self._local_bos()
        bos_text = self.cfg.bos_token or local_bos
        context = "; the system prompt as context before it" if prefix else ""
        aligned, counted = await self._probe_echo(pool, _PROBE_TEXT, "")
        shown = bool(aligned) and aligned[0].special
        hidden = not shown and counted is not None and counted > len(aligned)
        if shown or hidden:
            label = aligned[0].text if shown else (bos_text or "<bos>")
            return Conditioning("", label, prefix, f"first word conditioned on the BOS token the server adds "
                                                   f"({self.server} server){context}")
        if not bos_text:
            raise OutputFault("unsupported", f"the server ({self.server}) puts no BOS token before a scored text, so "
                                             "its first word cannot be scored as in-process: set model.bos_token to "
                                             "the served model's BOS text (e.g. '<|im_start|>' for SmolLM2) or "
                                             "model.path to its local files")
        aligned, counted = await self._probe_echo(pool, bos_text + _PROBE_TEXT, bos_text)
        # read as one token: hidden by the server (llama-cpp-python: counted in `usage`,
        # not echoed) or shown as one token without a log-prob (vLLM)
        first = aligned[0] if aligned else None
        one_token = first is not None and first.start == 0 and first.end == len(bos_text) and first.logprob is None \
            and (first.index is not None or counted is None or counted == len(aligned))
        if not one_token:
            raise OutputFault("unsupported", f"the server read the BOS text {bos_text!r} as ordinary text, not as its "
                                             "BOS token: check model.bos_token")
        return Conditioning(bos_text, bos_text, prefix, f"first word conditioned on the BOS token {bos_text!r}, "
                                                        f"sent before each text ({self.server} server){context}")

    async def _first_dist(self, pool: _Clients, cond: Conditioning) -> dict[str, float]:
        """The next-token log-probs after the conditioning alone, asked once: the first
        word's log-prob where the echo leaves it out."""
        key = cond.bos_sent + cond.prefix
        if key not in self._first_dists:
            fut: asyncio.Future[dict[str, float]] = asyncio.get_running_loop().create_future()
            self._first_dists[key] = fut
            top = _FULL_VOCAB if self.server == "llama-cpp-python" else self.cfg.max_top_logprobs
            try:
                data, _ = await self._post(pool, "completions", {"model": self.cfg.model, "prompt": key,
                                                                 "max_tokens": 1, "logprobs": top,
                                                                 "temperature": 0.0}, 1.0)
                fut.set_result(next_token_dist(data))
            except (RequestFailed, OutputFault) as exc:
                del self._first_dists[key]  # the next request asks again
                fut.set_exception(exc)
                fut.exception()  # retrieved: raised below for this request only
                raise
        return await asyncio.shield(self._first_dists[key])

    async def _server_ids(self, pool: _Clients, sent: str) -> list[int] | None:
        """The server's own token ids of the text sent (llama-cpp-python's tokenizer route)."""
        if self.server != "llama-cpp-python":
            return None
        try:
            data, _ = await self._post(pool, f"{self._root()}/extras/tokenize", {"input": sent}, 0.0)
        except RequestFailed:
            return None
        ids = data.get("tokens")
        return list(ids) if isinstance(ids, list) and all(isinstance(x, int) for x in ids) else None

    async def _score(self, pool: _Clients, req: Request) -> tuple[JSONObject, int]:
        assert self._cond is not None
        cond, text = self._cond, req.text or ""
        path, body, _ = self._body(req)
        data, attempts = await self._post(pool, path, body, estimate_tokens(req, 1))
        usage = reported_usage(data)
        tokens, lps, server_ids = echo_arrays(data)
        aligned = align(tokens, lps, cond.sent(text), cond.bos_sent)
        toks = text_tokens(aligned, cond)
        if toks and toks[0].logprob is None:
            toks[0].logprob = first_logprob(await self._first_dist(pool, cond), toks[0].text)
        _, bos_id = self._local_bos()
        ids: list[int] | None = None
        if self.tokenizer is not None:
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            if len(ids) != len(toks):
                raise OutputFault("bad_logprobs", f"the server split the text into {len(toks)} tokens, the local "
                                                  f"tokenizer (model.path) into {len(ids)}: is it the served model's?")
        elif server_ids is not None and all(t.index is not None and t.index < len(server_ids) for t in toks):
            ids = [server_ids[t.index] for t in toks if t.index is not None]
        else:
            every = await self._server_ids(pool, cond.sent(text))
            before = sum(1 for t in aligned if t.start < cond.start or t.special)
            if every is not None and len(every) == before + len(toks):
                ids = every[before:]
        out = output(cond, toks, ids, bos_id)
        if usage is not None:  # the scored text's own call (a shared first-word read is not one answer's)
            out["usage"] = usage
        return out, attempts

    async def _answer(self, pool: _Clients, req: Request) -> Response:
        t0 = time.perf_counter()
        attempts = 0
        try:
            if req.kind == "sequence_logprob":
                if self._scoring_refused is not None:
                    raise OutputFault(*self._scoring_refused)
                output, attempts = await self._score(pool, req)
                return Response(key=req.key, status="ok", output=output, latency_s=time.perf_counter() - t0,
                                attempts=attempts)
            path, body, max_tokens = self._body(req)
            data, attempts = await self._post(pool, path, body, estimate_tokens(req, max_tokens))
            output = self._parse(req, data)
            usage = reported_usage(data)
            if usage is not None:  # what the provider billed, for the run's token tally and cost
                output["usage"] = usage
        except RequestFailed as exc:
            attempts = exc.attempts
            suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
            return Response(key=req.key, status="failed", error=self._redact(exc.reason + suffix)[:300],
                            error_kind=exc.kind, latency_s=time.perf_counter() - t0, attempts=attempts)
        except OutputFault as exc:
            return Response(key=req.key, status="failed", error=self._redact(exc.reason)[:300],
                            error_kind=exc.kind, latency_s=time.perf_counter() - t0, attempts=attempts)
        return Response(key=req.key, status="ok", output=output, latency_s=time.perf_counter() - t0,
                        attempts=attempts)

    # -- a batch ----------------------------------------------------------------------------
    async def _run(self, requests: list[Request], emit: Emit, stop: threading.Event | None = None) -> None:
        pool = _Clients(ConcurrencyGate(self.controller), self._client)
        todo = iter(requests)
        if self.server is None:
            self.server = await self._which_server(pool)
        if self._cond is None and self._scoring_refused is None and any(r.kind == "sequence_logprob" for r in requests):
            try:
                self._cond = await self._conditioning(pool)
            except OutputFault as exc:  # every scoring request fails with this reason, counted
                self._scoring_refused = (exc.kind, exc.reason)
            except RequestFailed as exc:
                self._scoring_refused = (exc.kind, f"the scoring probe failed: {exc.reason}")

        async def worker() -> None:
            # one shared iterator: `next` never awaits, so no request is taken twice
            for req in todo:
                if stop is not None and stop.is_set():
                    return
                emit(await self._answer(pool, req))

        # More workers than slots, so requests sleeping before a retry do not idle a slot.
        n_workers = min(len(requests), 4 * self.cfg.concurrency)
        try:
            async with asyncio.TaskGroup() as tg:
                for _ in range(n_workers):
                    tg.create_task(worker())
        except BaseExceptionGroup as group:  # surface the first real error, not the group
            raise group.exceptions[0] from None
        finally:
            await pool.aclose()

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        """Run the requests on an event loop in a helper thread and call `emit` here, on
        the caller's thread (backends/event_loop.py says why)."""
        emit_from_loop(self._run, requests, emit, name="openai-compat-loop")

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        """Nothing to apply: concurrency and timeouts are fixed when the client is built."""

    def close(self) -> None:
        pass


# How often the caller's thread, waiting for the next answer, looks at the stop flag: a
# generation can take minutes, and an interrupt should not wait for it.
class _Clients:
    """The clients of one `execute` call: a free one for each admitted request (the gate
    admits at most `concurrency`, so at most that many are ever made)."""

    def __init__(self, gate: ConcurrencyGate, make: Callable[[], httpx.AsyncClient]) -> None:
        self.gate = gate
        self._make = make
        self._free: list[httpx.AsyncClient] = []
        self._all: list[httpx.AsyncClient] = []

    def take(self) -> httpx.AsyncClient:
        if not self._free:
            self._all.append(self._make())
            return self._all[-1]
        return self._free.pop()

    def give_back(self, client: httpx.AsyncClient) -> None:
        self._free.append(client)

    async def aclose(self) -> None:
        for c in self._all:
            await c.aclose()


def _top_k_asked(req: Request) -> int:
    top_k = req.decoding().top_k
    return top_k if top_k is not None else 20


def _identity(cfg: OpenAICompatConfig) -> JSONObject:
    # `scoring: 2`: answers cached before scored texts were conditioned on the BOS are not reused
    ident: JSONObject = {"backend": "openai_compat", "base_url": cfg.base_url, "model": cfg.model, "scoring": 2}
    for key in ("bos_token", "system_prompt", "path", "reasoning_effort"):
        if getattr(cfg, key):
            ident[key] = getattr(cfg, key)
    return ident


def _build(cfg: OpenAICompatConfig, rt: RuntimeConfig) -> OpenAICompatBackend:
    return OpenAICompatBackend(cfg, rt, tokenizer=local_tokenizer(cfg) if cfg.path else None)


def local_tokenizer(cfg: OpenAICompatConfig) -> Any:
    """The served model's tokenizer from its local files (`model.path`, `gguf_file`)."""
    from transformers import AutoTokenizer

    from biasaudit.backends.base import resolve_model_path

    where = resolve_model_path(cfg.path or "")
    kwargs = {"gguf_file": cfg.gguf_file} if cfg.gguf_file else {}
    try:
        return AutoTokenizer.from_pretrained(str(where), **kwargs)
    except (OSError, ValueError) as exc:
        raise BackendError(f"cannot load the tokenizer of {cfg.path!r}: {str(exc).splitlines()[0][:200]}",
                           key="model.path", hint="give the served model's local directory (or drop model.path)") from None


BACKENDS.add(
    "openai_compat",
    BackendKind(
        config=OpenAICompatConfig,
        supports=OpenAICompatBackend.supports,
        identity=_identity,
        build=_build,
        local=False,
        label_logprobs=True,  # from the first token's top_logprobs (`choice`), as llm_nli reads them
        billed=True,
        stated_price=lambda cfg: cfg.price,
    ),
)
