"""A local OpenAI-compatible server that injects model faults, for tests and benchmarks.

It listens on 127.0.0.1 (a free port), answers `/v1/chat/completions` and
`/v1/completions` over HTTP/1.1 with keep-alive, and decides per request, from the prompt alone, whether to fault and
how: a test can compute in advance which prompts fail for good, which fail a few times
and then answer, and which answer at once. It counts attempts per prompt, so a test can
check that retries were bounded. `healed = True` answers everything (a server that
recovered, for `--retry-failed`). It runs on asyncio on its own thread, so it serves
many concurrent requests; `latency` delays every answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# fault kind -> the failure kind the client should record for it
CLIENT_KIND = {
    "rate_limit": "rate_limited",              # 429 without Retry-After
    "rate_limit_retry_after": "rate_limited",  # 429 with Retry-After
    "http_500": "server_error",
    "http_502": "server_error",
    "http_503": "server_error",
    "reset": "connection",                     # TCP reset before any response
    "timeout": "timeout",                      # answers only after `hang_s`
    "truncated_json": "malformed",             # a 200 whose JSON body is cut in half
    "empty": "empty",                          # a 200 with empty content
    "content_filter": "content_filter",        # finish_reason content_filter, no content
    "bad_logprobs": "bad_logprobs",            # log-prob arrays of the wrong length / missing
    "unauthorized": "http_error",              # 401 whose body echoes the Authorization header
}
TRANSIENT_KINDS = ("rate_limit", "rate_limit_retry_after", "http_500", "http_502", "http_503",
                   "reset", "timeout", "truncated_json")
"""Faults a client retries: scripted to fail `times` attempts, or always."""
CONTENT_KINDS = ("empty", "content_filter", "bad_logprobs")
"""Faults in what the model sent back: failures at the first attempt, never retried."""
GENERATE_KINDS = (*TRANSIENT_KINDS, "empty", "content_filter")
"""Every fault a plain chat generation can show (log-prob faults need log-prob requests)."""


@dataclass(frozen=True)
class Fault:
    kind: str
    times: int | None = None
    """Attempts that fail before the server answers; None: it never answers."""

    def fails(self, attempt: int) -> bool:
        return self.times is None or attempt <= self.times


@dataclass(frozen=True)
class Raw:
    """An exact HTTP response (status line, headers, body) from a hostile server: sent
    `chunk` bytes at a time, `every` seconds apart (a server that trickles), then the
    connection is closed."""

    data: bytes
    every: float = 0.0
    chunk: int = 1 << 20


def http_response(status: int, body: bytes, headers: dict[str, str] | None = None, *,
                  content_length: bool = True) -> bytes:
    # the server closes the connection after a raw response: say so, so that no client reuses it
    head = [f"HTTP/1.1 {status} X", "Connection: close", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    if content_length:
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def prompt_of(messages: list[dict[str, Any]] | None = None, text: str | None = None) -> str:
    """What identifies a request to the server: the chat messages' contents, or the
    completion prompt."""
    if messages is not None:
        return "\n".join(str(m.get("content", "")) for m in messages)
    return text or ""


def mixed_faults(rate: float = 0.2, *, seed: int = 0, kinds: tuple[str, ...] = GENERATE_KINDS,
                 permanent_share: float = 0.5) -> Callable[[str], Fault | None]:
    """A fault for about `rate` of all prompts, its kind drawn from `kinds`, all chosen from
    a hash of the prompt. Content faults are permanent; retried faults are permanent for
    `permanent_share` of them and otherwise fail once or twice, then answer."""

    def choose(prompt: str) -> Fault | None:
        h = hashlib.sha256(f"{seed}\x00{prompt}".encode()).digest()
        if int.from_bytes(h[:8], "big") / 2**64 >= rate:
            return None
        kind = kinds[h[8] % len(kinds)]
        if kind in CONTENT_KINDS or h[9] / 256 < permanent_share:
            return Fault(kind)
        return Fault(kind, times=1 + h[10] % 2)

    return choose


class FaultServer:
    def __init__(self, faults: Callable[[str], Fault | None] | None = None, *, latency: float = 0.0,
                 hang_s: float = 1.0, retry_after: str = "0",
                 top: Callable[[str], list[tuple[str, float]]] | None = None, shape: str = "openai",
                 responder: Callable[[str, dict[str, str]], Raw | None] | None = None) -> None:
        self.faults = faults or (lambda prompt: None)
        self.responder = responder
        """(prompt, request headers) -> an exact response to send instead, or None."""
        self.owner = "vllm" if shape.startswith("vllm") else "fake"
        """What GET /models says owns the model (how biasaudit tells vLLM from others)."""
        self.shape = shape
        """Completions with echo: `openai` (legacy shape), `vllm` (vLLM's: a BOS token first,
        offsets counted over the decoded tokens, top_logprobs and prompt_logprobs too), or
        `vllm_prompt_logprobs` (only vLLM's `prompt_logprobs`, no echo arrays)."""
        self.top = top
        """prompt -> the first token's top log-probs to return (default: A, B, Yes, No)."""
        self.latency = latency
        self.hang_s = hang_s
        self.retry_after = retry_after
        self.healed = False
        self.attempts: Counter[str] = Counter()
        self.seen: list[dict[str, Any]] = []
        self.holds: dict[str, threading.Event] = {}
        """prompt -> an event the server waits for (5 s at most) before answering it."""
        self.released: dict[str, bool] = {}
        """prompt -> whether its hold was released (True) or ran out (False)."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.first_words: set[str] = set()
        """First words of the texts scored so far: the next-token distribution after the
        BOS lists them (each at FIRST_WORD_LOGPROB)."""
        self._lock = threading.Lock()
        # An asyncio server on its own thread: http.server's thread per connection falls
        # far behind at 32 concurrent clients on a busy 2-core machine.
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fault-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=256))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._server.close()
        pending = asyncio.all_tasks(self._loop)  # connections still open (kept alive, or hanging)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._server.wait_closed())
        self._loop.close()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def calls(self) -> int:
        return sum(self.attempts.values())

    def fault_for(self, prompt: str) -> Fault | None:
        return None if self.healed else self.faults(prompt)

    # -- HTTP/1.1 with keep-alive, just what an HTTP client sends for a JSON POST ----------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                body = json.loads(raw) if raw else {}  # a GET has no body
                if not await self._handle(writer, path, headers, body):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection (or gave up waiting)
        finally:
            writer.close()

    async def _handle(self, writer: asyncio.StreamWriter, path: str, headers: dict[str, str],
                      body: dict[str, Any]) -> bool:
        """Answer one request; False when the connection is gone."""
        if path.rstrip("/").endswith("/models"):
            return await _send(writer, 200, {"object": "list", "data": [{"id": "m", "object": "model",
                                                                         "owned_by": self.owner}]})
        completion = path.rstrip("/").endswith("/completions") and "chat" not in path
        prompt = prompt_of(text=body.get("prompt")) if completion else prompt_of(body.get("messages"))
        if completion and prompt.startswith(BOS):
            prompt = prompt[len(BOS):]  # the BOS a scored text is sent with does not name the request
        with self._lock:
            self.attempts[prompt] += 1
            attempt = self.attempts[prompt]
            self.seen.append({"path": path, "body": body, "auth": headers.get("authorization")})
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._respond(writer, prompt, attempt, completion, headers, body)
        finally:
            self.in_flight -= 1

    async def _respond(self, writer: asyncio.StreamWriter, prompt: str, attempt: int, completion: bool,
                       headers: dict[str, str], body: dict[str, Any]) -> bool:
        if self.latency:
            await asyncio.sleep(self.latency)
        if prompt in self.holds:
            self.released[prompt] = await asyncio.to_thread(self.holds[prompt].wait, 5.0)
        raw = self.responder(prompt, headers) if self.responder and not self.healed else None
        if raw is not None:
            try:
                for i in range(0, len(raw.data), raw.chunk):
                    writer.write(raw.data[i:i + raw.chunk])
                    await writer.drain()
                    if raw.every:
                        await asyncio.sleep(raw.every)
            except ConnectionError:
                pass
            return False
        fault = self.fault_for(prompt)
        kind = fault.kind if fault is not None and fault.fails(attempt) else None
        if kind == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()  # RST, no response at all
            return False
        if kind == "timeout":
            await asyncio.sleep(self.hang_s)
        if kind in ("rate_limit", "rate_limit_retry_after"):
            extra = {"Retry-After": self.retry_after} if kind == "rate_limit_retry_after" else {}
            return await _send(writer, 429, {"error": {"message": "rate limited", "type": "rate_limit"}}, extra)
        if kind == "unauthorized":
            return await _send(writer, 401, {"error": {"message": f"bad key in {headers.get('authorization')}"}})
        if kind in ("http_500", "http_502", "http_503"):
            return await _send(writer, int(kind[-3:]), {"error": {"message": "server fault"}})
        if completion and self.shape != "openai" and kind is None:
            payload = vllm_echo(prompt, with_echo=self.shape == "vllm")
        else:
            payload = _answer(body, prompt, completion, kind, self.top(prompt) if self.top else None,
                              self.first_words)
            if completion and body.get("echo"):
                self.first_words.add(prompt.split()[0] if prompt.split() else "")
        if kind == "truncated_json":
            raw = json.dumps(payload).encode()
            return await _send(writer, 200, raw[: len(raw) // 2])
        return await _send(writer, 200, payload)


def _answer(body: dict[str, Any], prompt: str, completion: bool, kind: str | None,
            top_tokens: list[tuple[str, float]] | None = None, first_words: set[str] | None = None) -> dict[str, Any]:
    usage = {"prompt_tokens": max(1, len(prompt) // 4)}
    with_bos = str(body.get("prompt", "")).startswith(BOS)
    if completion and not body.get("echo"):  # the next-token distribution after the prompt (the BOS)
        top = {w: FIRST_WORD_LOGPROB for w in sorted(first_words or ())}
        return {"choices": [{"text": "x", "logprobs": {"tokens": ["x"], "token_logprobs": [-1.0], "text_offset": [0],
                                                       "top_logprobs": [top]}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    if completion:  # echo, as llama-cpp-python gives it: a BOS it was sent is read and hidden
        words, offsets, pos = prompt.split(), [], 0
        for w in words:
            pos = prompt.index(w, pos)
            offsets.append(pos)
            pos += len(w)
        # the first token reported has no log-prob (the OpenAI convention)
        lps: list[float | None] = [None, *[-1.0 - i % 3 for i in range(1, len(words))]]
        if kind == "bad_logprobs":
            lps = lps[:-1]  # one log-prob short
        usage = {"prompt_tokens": len(words) + with_bos, "completion_tokens": 0}
        if int(body.get("max_tokens") or 0) > 0 and kind != "bad_logprobs":  # the token it generated, echoed too
            words, lps, offsets = [*words, "\n"], [*lps, -0.5], [*offsets, len(prompt)]
            usage["completion_tokens"] = 1
        return {"choices": [{"text": prompt, "logprobs": {"tokens": words, "token_logprobs": lps,
                                                          "text_offset": offsets}}], "usage": usage}
    text = "Yes, because it is so."
    choice: dict[str, Any] = {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if body.get("logprobs"):
        pairs = top_tokens or [("A", -0.2), ("B", -1.9), ("Yes", -2.5), ("No", -3.1)]
        top = [{"token": t, "logprob": lp} for t, lp in pairs]
        choice["message"]["content"] = pairs[0][0]
        choice["logprobs"] = {"content": [] if kind == "bad_logprobs" else
                              [{"token": pairs[0][0], "logprob": pairs[0][1], "top_logprobs": top}]}
    if kind == "empty":
        choice["message"]["content"] = ""
    if kind == "content_filter":
        choice = {"message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}
    usage["completion_tokens"] = len(str(choice["message"]["content"] or "").split())
    return {"choices": [choice], "usage": usage}


VLLM_BOS = "<s>"
BOS = "<s>"
"""The fake model's BOS text (`model.bos_token` for the `openai` shape)."""
FIRST_WORD_LOGPROB = -1.0
"""log p(first word | BOS) in the fake's next-token distribution."""


def echo_pieces(prompt: str) -> list[tuple[str, float]]:
    """The fake tokenizer: each word with the whitespace before it (so the pieces join to
    the prompt, as a real tokenizer's decoded tokens do), and a made-up log-prob each."""
    import re

    return [(m.group(0), -0.5 - (i % 4) * 0.75) for i, m in enumerate(re.finditer(r"\s*\S+", prompt))]


def vllm_echo(prompt: str, *, with_echo: bool) -> dict[str, Any]:
    """A completion in vLLM's shapes for `echo=True, logprobs=0, max_tokens=0` (vLLM's
    OpenAI server, vllm/entrypoints/openai/completion): the prompt's token ids start with
    BOS; `logprobs` lists the decoded tokens (BOS as its text), token_logprobs (None for
    the first), text_offset as the running sum of the decoded tokens' lengths (so the BOS
    shifts every later offset) and top_logprobs; `prompt_logprobs` lists None, then per
    position {token id: {logprob, rank, decoded_token}}."""
    pieces = echo_pieces(prompt)
    tokens = [VLLM_BOS, *[t for t, _ in pieces]]
    lps: list[float | None] = [None, *[lp for _, lp in pieces]]
    offsets, pos = [], 0
    for t in tokens:
        offsets.append(pos)
        pos += len(t)
    ids = [1, *range(100, 100 + len(pieces))]
    prompt_logprobs: list[dict[str, Any] | None] = [None]
    for i, (tok, lp) in enumerate(pieces, start=1):
        prompt_logprobs.append({str(ids[i]): {"logprob": lp, "rank": 1 + i % 3, "decoded_token": tok}})
    choice: dict[str, Any] = {"index": 0, "text": prompt, "finish_reason": "length", "stop_reason": None,
                              "prompt_logprobs": prompt_logprobs, "logprobs": None}
    if with_echo:
        choice["logprobs"] = {"text_offset": offsets, "token_logprobs": lps, "tokens": tokens,
                              "top_logprobs": [None, *[{t: lp} for t, lp in pieces]]}
    n = len(tokens)
    return {"id": "cmpl-fake", "object": "text_completion", "created": 0, "model": "fake", "choices": [choice],
            "usage": {"prompt_tokens": n, "completion_tokens": 0, "total_tokens": n}}


REASONS = {200: "OK", 401: "Unauthorized", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable"}


async def _send(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any] | bytes,
                headers: dict[str, str] | None = None) -> bool:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    head = [f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}", "Content-Type: application/json",
            f"Content-Length: {len(data)}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()
    except ConnectionError:  # the client gave up (timed out) and closed the connection
        return False
    return not writer.is_closing()


@contextmanager
def fault_server(faults: Callable[[str], Fault | None] | None = None, **kw: Any) -> Iterator[FaultServer]:
    server = FaultServer(faults, **kw)
    try:
        yield server
    finally:
        server.close()


def main() -> None:
    """Serve without faults until stdin closes (a separate process for benchmarks, so the
    server does not share the client's interpreter lock); prints the base URL first."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = ap.parse_args()
    with FaultServer(latency=args.latency) as server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
