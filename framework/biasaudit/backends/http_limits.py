"""Flow control for HTTP backends: an adaptive concurrency limit (AIMD) and per-host rate
limits (token buckets for requests/s and tokens/min, plus a pause after `Retry-After`).

Written by hand: aiolimiter (the usual asyncio rate limiter) binds its state to one event
loop and cannot take back tokens after the fact, and we need both: the per-host budget is
shared by every backend of the process (each `execute` runs its own loop), and a token
estimate is corrected with the `usage` the server reports. No maintained Python library
offers an AIMD concurrency limit (Netflix's concurrency-limits is Java).

The controller and buckets take the time as an argument, so tests drive them with a fake
clock; only `ConcurrencyGate` touches asyncio.
"""

from __future__ import annotations

import asyncio
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field


class AIMDController:
    """Requests allowed in flight. Multiplicative decrease when the server says it is
    overloaded (429), additive increase of 1 after `limit` successes in a row at the
    current limit (one full window, as in TCP congestion avoidance), within [min, max].

    A burst of 429s caused by one overload arrives from many requests at once; only the
    first of them, among requests sent since the last decrease, lowers the limit again
    (`epoch` tells them apart), so one overload halves the limit once, not to the floor."""

    def __init__(self, min_limit: int, max_limit: int, *, initial: int | None = None,
                 decrease: float = 0.5) -> None:
        if not 1 <= min_limit <= max_limit:
            raise ValueError(f"need 1 <= min_limit <= max_limit, got {min_limit}, {max_limit}")
        self.min_limit = min_limit
        self.max_limit = max_limit
        self.decrease = decrease
        self.limit = max_limit if initial is None else min(max(initial, min_limit), max_limit)
        self.epoch = 0
        self._successes = 0

    def on_success(self) -> None:
        self._successes += 1
        if self._successes >= self.limit:
            self._successes = 0
            self.limit = min(self.max_limit, self.limit + 1)

    def on_overload(self, epoch_at_send: int) -> bool:
        """Lower the limit unless this request was sent before the last decrease (that
        overload has been answered already). Returns whether the limit changed."""
        if epoch_at_send != self.epoch:
            return False
        self.epoch += 1
        self._successes = 0
        self.limit = max(self.min_limit, int(self.limit * self.decrease))
        return True


class TokenBucket:
    """`rate` units per second, holding at most `capacity`. `reserve` takes the units at
    once (the level may go negative: later callers queue behind the debt) and returns how
    long the caller must wait before using them. A cost above the capacity waits for a
    full bucket, never forever."""

    def __init__(self, rate: float, capacity: float) -> None:
        if rate <= 0 or capacity <= 0:
            raise ValueError("rate and capacity must be positive")
        self.rate = rate
        self.capacity = capacity
        self.level = capacity
        self._t: float | None = None

    def _refill(self, now: float) -> None:
        if self._t is None:
            self._t = now
        elif now > self._t:
            self.level = min(self.capacity, self.level + (now - self._t) * self.rate)
            self._t = now

    def reserve(self, cost: float, now: float) -> float:
        self._refill(now)
        need = min(cost, self.capacity)
        wait = max(0.0, need - self.level) / self.rate
        self.level -= cost
        return wait

    def adjust(self, delta: float, now: float) -> None:
        """Charge `delta` more units (refund when negative): an estimate corrected by the
        amount actually used."""
        self._refill(now)
        self.level = min(self.capacity, self.level - delta)


@dataclass
class HostLimiter:
    """The budget of one host (and API key): request and token buckets, both optional,
    and a pause until a `Retry-After` time has passed."""

    requests: TokenBucket | None = None
    tokens: TokenBucket | None = None
    pause_until: float = float("-inf")
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve(self, est_tokens: float, now: float) -> float:
        """Seconds to wait before sending a request estimated at `est_tokens` tokens."""
        with self._lock:
            wait = max(0.0, self.pause_until - now)
            if self.requests is not None:
                wait = max(wait, self.requests.reserve(1.0, now))
            if self.tokens is not None:
                wait = max(wait, self.tokens.reserve(est_tokens, now))
            return wait

    def correct(self, est_tokens: float, used_tokens: float, now: float) -> None:
        if self.tokens is not None:
            with self._lock:
                self.tokens.adjust(used_tokens - est_tokens, now)

    def pause(self, seconds: float, now: float) -> None:
        with self._lock:
            self.pause_until = max(self.pause_until, now + seconds)


_HOSTS: dict[tuple[str, str | None, float | None, float | None], HostLimiter] = {}
_HOSTS_LOCK = threading.Lock()


def host_limiter(host: str, key_env: str | None, requests_per_s: float | None,
                 tokens_per_min: float | None) -> HostLimiter:
    """The process-wide limiter of a host: every backend pointed at the same host with the
    same key and limits shares one budget (e.g. the model under test and its judges).
    Buckets hold one second's worth, so the pace is smooth, never a minute's burst."""
    k = (host, key_env, requests_per_s, tokens_per_min)
    with _HOSTS_LOCK:
        if k not in _HOSTS:
            _HOSTS[k] = HostLimiter(
                requests=TokenBucket(requests_per_s, max(1.0, requests_per_s)) if requests_per_s else None,
                tokens=TokenBucket(tokens_per_min / 60.0, tokens_per_min / 60.0) if tokens_per_min else None,
            )
        return _HOSTS[k]


class ConcurrencyGate:
    """Admits a request while fewer than the controller's limit are in flight. Lowering
    the limit does not cancel requests already sent; new ones wait until enough finish."""

    def __init__(self, controller: AIMDController) -> None:
        self.controller = controller
        self.in_flight = 0
        self._cond = asyncio.Condition()

    async def acquire(self) -> int:
        """Wait for a slot; returns the controller epoch at send time."""
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < self.controller.limit)
            self.in_flight += 1
            return self.controller.epoch

    async def release(self) -> None:
        async with self._cond:
            self.in_flight -= 1
            # wake as many waiters as there are free slots (the limit may have just grown),
            # not all of them: with 4 workers per slot, notify_all costs O(workers) per call
            self._cond.notify(max(1, self.controller.limit - self.in_flight))


class BodyTooLarge(Exception):
    """A response body, or one line of it, went past its byte limit."""


def bounded_lines(chunks: Iterable[bytes], encoding: str, line_limit: int, total_limit: int) -> Iterator[bytes]:
    """The lines of a (possibly gzip/deflate-compressed) body read chunk by chunk, each at
    most `line_limit` bytes and all together at most `total_limit`, decompressed here so
    that a few compressed bytes cannot expand past either (zlib's `max_length`). For
    provider batch results, which run to hundreds of megabytes: held one line at a time."""
    enc = encoding.strip().lower()
    if enc not in ("", "identity", "gzip", "x-gzip", "deflate"):
        raise BodyTooLarge(f"unsupported Content-Encoding {enc[:40]!r}")
    dec = zlib.decompressobj(wbits=47) if enc not in ("", "identity") else None  # 47: gzip or zlib header
    buf = bytearray()
    total = 0

    def take(data: bytes) -> Iterator[bytes]:
        nonlocal total
        total += len(data)
        if total > total_limit:
            raise BodyTooLarge(f"body larger than {total_limit} bytes")
        buf.extend(data)
        while (nl := buf.find(b"\n")) >= 0:
            line = bytes(buf[:nl])
            del buf[:nl + 1]
            if len(line) > line_limit:
                raise BodyTooLarge(f"a line longer than {line_limit} bytes")
            yield line
        if len(buf) > line_limit:
            raise BodyTooLarge(f"a line longer than {line_limit} bytes")

    try:
        for chunk in chunks:
            if dec is None:
                yield from take(chunk)
                continue
            data = dec.decompress(chunk, line_limit + 1)
            yield from take(data)
            while dec.unconsumed_tail:
                yield from take(dec.decompress(dec.unconsumed_tail, line_limit + 1))
        if dec is not None:
            yield from take(dec.flush())
    except zlib.error:
        raise BodyTooLarge(f"undecodable {enc} body") from None
    if buf:
        yield bytes(buf)


def bounded_body(chunks: Iterable[bytes], encoding: str, limit: int) -> bytes:
    """The whole body, at most `limit` bytes after decompression (see `bounded_lines`)."""
    return b"\n".join(bounded_lines(chunks, encoding, limit, limit))
