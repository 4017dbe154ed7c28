"""`anthropic`: a model behind Anthropic's Messages API, through the official SDK.

`generate` is one `messages.create` call: the chat's system message (or the variant's
`system_prompt`) goes to the top-level `system`, the rest stay `messages`; `max_tokens`
(which the API requires), `temperature` (unless `send_temperature: false`) and the
config's `stop_sequences` are sent; the answer keeps its `stop_reason` (end_turn, max_tokens, stop_sequence, refusal...)
and the `usage` Anthropic billed (input and output tokens, stored as `records.Usage`).
Messages returns no log-probs, so scoring probes are refused at validate; a judge's
`choice` is asked as a short generated answer naming one of the words (`probs` is then
1 for that word: a vote, not a probability, marked `generated_choice`).

The SDK sends and parses; everything around the call is the project's, as for
`openai_compat`: the SDK's retries are off (`max_retries=0`) so each fault is counted
and retried by the same policy (429 and 529 with `retry-after` honoured up to
`max_backoff_s`, both halving the adaptive concurrency limit; 5xx, timeouts and
connection errors retried with backoff; other 4xx failures at once), the same host rate
limits, and every failure stored with its kind. The HTTP client is ours: no environment
proxies (`trust_env=False`), no redirects, `timeout` for the whole attempt, and a body
read only up to `runtime.limits.http_response_bytes` (uncompressed: `identity` is asked
for and any other encoding refused, so a small compressed body cannot expand past it).

The key is read from the variable named in `api_key_env` and handed to the SDK
explicitly, so the SDK never looks for credentials of its own (profiles, config files);
it is registered with the secrets scrubber and never stored, logged or shown.
The SDK is imported only when the backend is built: a command that does not use it does
not pay for its import.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from biasaudit._util.secrets import redact, watch_key
from biasaudit.backends.base import BACKENDS, BackendKind, Emit, Response
from biasaudit.backends.batch_anthropic import attach as attach_batches
from biasaudit.backends.event_loop import emit_from_loop
from biasaudit.backends.http_limits import AIMDController, ConcurrencyGate, host_limiter
from biasaudit.backends.openai_compat import (
    AttemptFault,
    RequestFailed,
    _Secret,
    estimate_tokens,
    parse_retry_after,
)
from biasaudit.backends.openai_parse import MAX_USAGE, OutputFault
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.spec import AnthropicConfig, RuntimeConfig

if TYPE_CHECKING:
    import httpx2
    from anthropic import AsyncAnthropic

log = logging.getLogger(__name__)

NO_LOGPROBS = "Anthropic's Messages API returns no log-probs"
"""Why scoring probes are refused on this backend (said at validate)."""

STOP_REASONS = ("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal",
                "model_context_window_exceeded")
"""The `stop_reason` values the Messages API documents."""

_CHOICE_MAX_TOKENS = 8
"""A judge's answer word, generated: enough tokens for one word and its punctuation."""


class BodyTooLarge(Exception):
    """The response body passed `runtime.limits.http_response_bytes` (or came compressed)."""


def _bounded_transport(limit: int, connections: int) -> httpx2.AsyncBaseTransport:
    """An httpx2 transport whose responses are read at most `limit` bytes: the SDK reads
    whole bodies (success and error alike) before we see them, so the bound must sit
    below it."""
    import httpx2

    inner = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_connections=connections,
                                                           max_keepalive_connections=connections),
                                      retries=0)

    class Bounded(httpx2.AsyncByteStream):
        def __init__(self, stream: httpx2.AsyncByteStream) -> None:
            self._stream = stream

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self._stream:
                seen += len(chunk)
                if seen > limit:
                    raise BodyTooLarge(f"response body larger than {limit} bytes (runtime.limits.http_response_bytes)")
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    class Transport(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            r = await inner.handle_async_request(request)
            enc = r.headers.get("Content-Encoding", "identity").strip().lower()
            if enc not in ("", "identity"):
                await r.aclose()
                raise BodyTooLarge(f"a {enc[:40]!r} encoded body was sent, though identity was asked for")
            assert isinstance(r.stream, httpx2.AsyncByteStream)
            return httpx2.Response(r.status_code, headers=r.headers, stream=Bounded(r.stream),
                                   extensions=r.extensions)

        async def aclose(self) -> None:
            await inner.aclose()

    return Transport()


def _cause(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` in `exc`'s chain (the SDK wraps transport errors)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, kind):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


def _status_fault(status: int, headers: Any, err_type: str | None, message: str | None) -> AttemptFault:
    """The fault an Anthropic error status stands for (its body: {type: error, error:
    {type, message}}), and whether to try again. 529 (`overloaded_error`) is the API's
    own overload signal: retried after `retry-after` like a 429, and counted as one."""
    said = " ".join(f"{err_type or ''}: {message or ''}".split()).strip(": ")[:200]
    reason = f"HTTP {status}" + (f" {said}" if said else "")
    ms = headers.get("retry-after-ms")
    retry_after = None
    if ms:
        try:
            retry_after = max(0.0, float(ms) / 1000.0)
        except ValueError:
            retry_after = None
    if retry_after is None:
        retry_after = parse_retry_after(headers.get("retry-after"))
    if status in (429, 529):
        return AttemptFault("rate_limited", reason, retry=True, retry_after=retry_after)
    if status == 408:
        return AttemptFault("timeout", reason, retry=True, retry_after=retry_after)
    if status >= 500 or status == 409:
        return AttemptFault("server_error", reason, retry=True, retry_after=retry_after)
    return AttemptFault("http_error", reason, retry=False)


def _split_system(messages: list[dict[str, str]], standing: str | None) -> tuple[str | None, list[dict[str, str]]]:
    """Messages' top-level `system` and the turns: the chat's own system messages joined
    (a request's system message wins over the variant's standing one, as in openai_compat)."""
    system = [m.get("content", "") for m in messages if m.get("role") == "system"]
    turns = [{"role": m.get("role", "user"), "content": m.get("content", "")} for m in messages
             if m.get("role") != "system"]
    if system:
        return "\n\n".join(system), turns
    return standing, turns


def _field(o: Any, name: str) -> Any:
    """`o.name`, or `o[name]` for a mapping (a batch result's message is plain JSON)."""
    return o.get(name) if isinstance(o, dict) else getattr(o, name, None)


def _count(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_USAGE else None


def _billed(data: Any) -> int | None:
    """Input + output tokens of the reported usage, when both are counts (a hostile body's
    strings or huge numbers are none: `parse_message` then calls the answer malformed)."""
    usage = _field(data, "usage")
    tin, tout = _count(_field(usage, "input_tokens")), _count(_field(usage, "output_tokens"))
    return None if tin is None or tout is None else tin + tout


def parse_message(data: Any) -> JSONObject:
    """A Messages response as a generate output: its text blocks joined, the stop reason,
    the billed usage. A refusal (`stop_reason: refusal`) is an answer, as in openai_compat."""
    content = _field(data, "content")
    stop = _field(data, "stop_reason")
    if not isinstance(content, list):
        raise OutputFault("malformed", "message has no `content` list")
    texts = [_field(b, "text") for b in content if _field(b, "type") == "text"]
    if any(not isinstance(t, str) for t in texts):
        raise OutputFault("malformed", "a text block has no text")
    text = "".join(t for t in texts if isinstance(t, str))
    usage = _field(data, "usage")
    tin, tout = _field(usage, "input_tokens"), _field(usage, "output_tokens")
    counts_ok = all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_USAGE for v in (tin, tout))
    if usage is not None and not counts_ok:
        raise OutputFault("malformed", "`usage` is not two token counts")
    if not text.strip() and stop != "refusal":
        raise OutputFault("empty", f"empty content (stop_reason {stop})")
    out: JSONObject = {"text": text, "finish_reason": str(stop) if stop is not None else None,
                       "stop_reason": str(stop) if stop is not None else None,
                       "output_tokens": tout if isinstance(tout, int) else len(text.split())}
    if stop == "refusal":
        out["refusal"] = True
    if usage is not None and counts_ok:
        out["usage"] = {"input_tokens": tin, "output_tokens": tout}
    return out


def choice_from_text(text: str, words: list[str]) -> JSONObject:
    """A judge's generated answer read as one of `words`: the first word of the answer
    that is one of them (case and punctuation aside); none is a malformed answer."""
    import re

    lower = {w.lower(): w for w in words}
    for tok in re.findall(r"[\w']+", text):
        w = lower.get(tok.lower())
        if w is not None:
            return {"probs": {x: 1.0 if x == w else 0.0 for x in words}, "choice": w, "logprobs": {},
                    "generated_choice": True}
    raise OutputFault("malformed", f"the answer names none of the answer words: {text[:80]!r}")


class AnthropicBackend:
    supports = frozenset({"generate", "choice"})

    def __init__(self, cfg: AnthropicConfig, runtime: RuntimeConfig, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        key = os.environ.get(cfg.api_key_env)
        if not key:
            raise BackendError(f"environment variable {cfg.api_key_env} is not set (the Anthropic API key)",
                               key="model.api_key_env", hint=f"export {cfg.api_key_env}=... before the run")
        self._key = _Secret(key)
        watch_key(cfg.api_key_env, key)  # scrubbed, in every encoding, from whatever is written
        self.cfg = cfg
        self.runtime = runtime
        self.controller = AIMDController(cfg.min_concurrency, cfg.concurrency)
        from urllib.parse import urlsplit

        self.limiter = host_limiter(urlsplit(cfg.base_url).netloc, cfg.api_key_env, cfg.requests_per_s,
                                    cfg.tokens_per_min)
        self.clock = clock
        self.sleep = sleep
        self.rng = random.Random()
        self.http_calls = 0

    def __repr__(self) -> str:
        return f"AnthropicBackend(base_url={self.cfg.base_url!r}, model={self.cfg.model!r})"

    def _client(self) -> AsyncAnthropic:
        import httpx2
        from anthropic import AsyncAnthropic

        http = httpx2.AsyncClient(
            transport=_bounded_transport(self.runtime.limits.http_response_bytes, self.cfg.concurrency),
            timeout=httpx2.Timeout(self.cfg.timeout), follow_redirects=False, trust_env=False)
        return AsyncAnthropic(api_key=self._key.reveal(), base_url=self.cfg.base_url, max_retries=0,
                              timeout=self.cfg.timeout, http_client=http,
                              default_headers={"Accept-Encoding": "identity"})

    def _params(self, req: Request) -> tuple[dict[str, Any], int]:
        p = req.decoding()
        system, turns = _split_system(list(req.messages or []), self.cfg.system_prompt)
        if not turns:
            turns = [{"role": "user", "content": req.text or ""}]
        if req.kind == "choice":
            max_tokens, temperature = _CHOICE_MAX_TOKENS, 0.0
        else:
            max_tokens = p.max_tokens if p.max_tokens is not None else 128
            temperature = p.temperature if p.temperature is not None else 0.0
        params: dict[str, Any] = {"model": self.cfg.model, "messages": turns, "max_tokens": max_tokens}
        if self.cfg.send_temperature:
            # the SDK 2.x no longer lists `temperature` among create()'s arguments; the API
            # takes it in the body (0: greedy, as the spec's probe asks)
            params["extra_body"] = {"temperature": temperature}
        if system:
            params["system"] = system
        if self.cfg.stop_sequences:
            params["stop_sequences"] = list(self.cfg.stop_sequences)
        return params, max_tokens

    def batch_params(self, req: Request) -> dict[str, Any]:
        """The Messages body of `req` as one line of a Message Batch: the same body a
        direct call sends (the SDK's `extra_body` merged in)."""
        params, _ = self._params(req)
        return {**{k: v for k, v in params.items() if k != "extra_body"}, **params.get("extra_body", {})}

    def batch_parse(self, req: Request, message: dict[str, Any]) -> JSONObject:
        """A batch result's message as the output its direct call gives."""
        return parse_message(message)

    async def _attempt(self, client: AsyncAnthropic, params: dict[str, Any]) -> Any:
        import anthropic

        self.http_calls += 1
        try:
            async with asyncio.timeout(self.cfg.timeout):
                return await client.messages.create(**params)
        except TimeoutError:
            raise AttemptFault("timeout", f"no complete response within {self.cfg.timeout:g} s", retry=True) from None
        except anthropic.APIStatusError as exc:
            msg = redact(str(exc.api_message or ""))  # what the API said (never the key: scrubbed all the same)
            raise _status_fault(exc.status_code, exc.response.headers, exc.type, msg) from None
        except anthropic.APIResponseValidationError:
            raise AttemptFault("malformed", "the response is not a Messages object", retry=False) from None
        except anthropic.APIConnectionError as exc:
            big = _cause(exc, BodyTooLarge)
            if big is not None:
                raise AttemptFault("malformed", str(big), retry=False) from None
            if isinstance(exc, anthropic.APITimeoutError):
                raise AttemptFault("timeout", f"no complete response within {self.cfg.timeout:g} s",
                                   retry=True) from None
            raise AttemptFault("connection", f"connection error: {type(exc.__cause__ or exc).__name__}",
                               retry=True) from None
        except BodyTooLarge as exc:
            raise AttemptFault("malformed", str(exc), retry=False) from None
        except ValueError:  # a body that is not JSON
            raise AttemptFault("malformed", "truncated or invalid JSON in the response", retry=True) from None
        except RecursionError:
            raise AttemptFault("malformed", "JSON in the response is nested too deeply", retry=False) from None

    async def _post(self, client: AsyncAnthropic, gate: ConcurrencyGate, params: dict[str, Any],
                    est: float) -> tuple[Any, int]:
        attempt = 0
        while True:
            attempt += 1
            epoch = await gate.acquire()
            try:
                wait = self.limiter.reserve(est, self.clock())
                if wait > 0:
                    await self.sleep(wait)
                data = await self._attempt(client, params)
            except AttemptFault as fault:
                err = fault
            else:
                self.controller.on_success()
                self.limiter.correct(est, _billed(data) or est, self.clock())
                return data, attempt
            finally:
                await gate.release()
            if err.kind == "rate_limited":
                if self.controller.on_overload(epoch):
                    log.info("%s from %s: concurrency limit now %d", err.reason[:8], self.cfg.base_url,
                             self.controller.limit)
                if err.retry_after is not None:
                    self.limiter.pause(min(err.retry_after, self.cfg.max_backoff_s), self.clock())
            if not err.retry or attempt > self.cfg.max_retries:
                raise RequestFailed(err.kind, err.reason, attempt)
            delay = err.retry_after
            if delay is None:
                delay = self.cfg.backoff_s * 2 ** (attempt - 1) * (1 + 0.25 * self.rng.random())
            await self.sleep(min(delay, self.cfg.max_backoff_s))

    async def _answer(self, client: AsyncAnthropic, gate: ConcurrencyGate, req: Request) -> Response:
        t0 = time.perf_counter()
        attempts = 0
        try:
            if req.kind not in self.supports:
                raise RequestFailed("unsupported", f"anthropic cannot do {req.kind}: {NO_LOGPROBS}", 0)
            params, max_tokens = self._params(req)
            data, attempts = await self._post(client, gate, params, estimate_tokens(req, max_tokens))
            out = parse_message(data)
            if req.kind == "choice":
                usage = out.get("usage")
                out = {**choice_from_text(str(out["text"]), req.decoding().choices), "text": out["text"],
                       "stop_reason": out["stop_reason"]}
                if usage is not None:
                    out["usage"] = usage
        except RequestFailed as exc:
            suffix = f" (after {exc.attempts} attempts)" if exc.attempts > 1 else ""
            return Response(key=req.key, status="failed", error=redact(exc.reason + suffix)[:300],
                            error_kind=exc.kind, latency_s=time.perf_counter() - t0, attempts=max(1, exc.attempts))
        except OutputFault as exc:
            return Response(key=req.key, status="failed", error=redact(exc.reason)[:300], error_kind=exc.kind,
                            latency_s=time.perf_counter() - t0, attempts=attempts)
        return Response(key=req.key, status="ok", output=out, latency_s=time.perf_counter() - t0, attempts=attempts)

    async def _run(self, requests: list[Request], emit: Emit, stop: threading.Event) -> None:
        gate = ConcurrencyGate(self.controller)
        client = self._client()
        todo = iter(requests)

        async def worker() -> None:
            for req in todo:  # one shared iterator: `next` never awaits, so no request is taken twice
                if stop.is_set():
                    return
                emit(await self._answer(client, gate, req))

        try:
            async with asyncio.TaskGroup() as tg:
                for _ in range(min(len(requests), 4 * self.cfg.concurrency)):
                    tg.create_task(worker())
        except BaseExceptionGroup as group:
            raise group.exceptions[0] from None
        finally:
            await client.close()

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        """As `OpenAICompatBackend.execute`: the requests run on an event loop in a helper
        thread, each answer is emitted here on the caller's thread as it completes, and
        Ctrl-C cancels the loop's tasks."""
        emit_from_loop(self._run, requests, emit, name="anthropic-loop")

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        """Nothing to apply: concurrency and timeouts are fixed when the client is built."""

    def close(self) -> None:
        pass


def _identity(cfg: AnthropicConfig) -> JSONObject:
    ident: JSONObject = {"backend": "anthropic", "base_url": cfg.base_url, "model": cfg.model}
    if cfg.system_prompt:
        ident["system_prompt"] = cfg.system_prompt
    if cfg.stop_sequences:
        ident["stop_sequences"] = list(cfg.stop_sequences)
    if not cfg.send_temperature:
        ident["send_temperature"] = False  # answers sampled at the model's own default
    return ident


def _batches(backend: Any, runtime: RuntimeConfig) -> Any:
    """Anthropic's Message Batches for this backend (`runtime.batch.enabled`), with its
    own request bodies and answer parser, so a batch answer is the output a direct call
    gives (backends/batch_anthropic.py speaks the batch API)."""
    from biasaudit.backends.batch_anthropic import AnthropicBatches

    if not isinstance(backend, AnthropicBackend):
        return None
    return AnthropicBatches(base_url=backend.cfg.base_url.rstrip("/") + "/v1", api_key=backend._key.reveal(),
                            model=backend.cfg.model, runtime=runtime, timeout=backend.cfg.timeout,
                            encode=backend.batch_params, decode=backend.batch_parse, redact=redact)


attach_batches("anthropic", _batches)

BACKENDS.add(
    "anthropic",
    BackendKind(
        config=AnthropicConfig,
        supports=AnthropicBackend.supports,
        identity=_identity,
        build=AnthropicBackend,
        local=False,
        refused_why=NO_LOGPROBS,
        billed=True,
        stated_price=lambda cfg: cfg.price,
    ),
)
