"""Provider batch APIs: what a batch provider does (`BatchProvider`), what it reports
(`BatchState`, `BatchResult`), and the registry by which a backend kind declares its
provider (`BATCH_PROVIDERS`).

A provider only speaks HTTP: it encodes a request as one line of its batch file, submits
lines, reports a batch's state and yields its results. Collecting requests, keeping batch
ids in the cache, polling, retrying and storing answers is the engine's (engine/batch.py),
the same for every provider. A backend kind declares its provider here:

    BATCH_PROVIDERS.add("openai_compat", make_openai_batches, kinds=frozenset({"generate", ...}),
                        why_not="...")

where the factory takes the built backend and returns a provider (None: this backend,
as configured, offers none). A backend kind with no entry has no batch API, and
`runtime.batch.enabled` on it is refused at validate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from biasaudit.backends.http_limits import BodyTooLarge, bounded_lines
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.spec import BatchConfig, RuntimeConfig

TRANSIENT_KINDS = frozenset({"batch_expired", "batch_canceled", "rate_limited", "server_error", "timeout",
                             "batch_missing"})
"""Failure kinds a new batch may cure (`runtime.batch.retry`); the rest are final, as the
same faults are without batches (a 4xx refusal, a malformed answer)."""


@dataclass(frozen=True)
class BatchState:
    """A batch as the provider reports it: still running or ended, its own status word,
    and its request counts as the provider gives them."""

    ended: bool
    status: str
    counts: dict[str, int] = field(default_factory=dict)
    note: str = ""
    """What the provider said went wrong with the batch as a whole (a failed validation)."""


@dataclass(frozen=True)
class BatchResult:
    """One request's result: the provider's response body (`body`, an answer to decode), or
    the failure kind and reason."""

    custom_id: str
    body: dict[str, Any] | None = None
    kind: str | None = None
    reason: str = ""


class BatchFault(Exception):
    """The batch API itself failed (an upload or a submit refused, a status unreadable).
    `lasting`: asking again cannot help (results past the size limits)."""

    def __init__(self, reason: str, *, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting


class BatchProvider(Protocol):
    """One provider's batch API, for one model."""

    name: str
    """`openai` or `anthropic`: stored with each batch id."""
    max_requests: int
    """The provider's limit on requests per batch."""
    max_bytes: int
    """The provider's limit on one batch's request file, in bytes."""

    def check(self, req: Request) -> str | None:
        """Why this request cannot go through the batch API (None: it can)."""

    def line(self, custom_id: str, req: Request) -> JSONObject:
        """The request as one entry of the provider's batch file."""

    def submit(self, lines: Sequence[JSONObject], tag: str) -> str:
        """Submit one batch, sent with `tag` where the provider keeps one (`find`);
        returns its id. Raises `BatchFault`."""

    def find(self, tags: set[str], since: float) -> dict[str, str] | None:
        """The ids of this account's batches submitted with any of `tags` (tag -> batch id),
        none created before `since` (seconds since the epoch) needing a look; None: this
        provider keeps no tag to look a batch up by. Raises `BatchFault` when the listing
        could not be read to its end."""

    def state(self, batch_id: str) -> BatchState:
        """The batch's current state. Raises `BatchFault`."""

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """Every result the ended batch holds (requests it never ran are simply absent)."""

    def decode(self, req: Request, body: dict[str, Any]) -> JSONObject:
        """The answer of `req` from its response body, as the backend's own call gives it.
        Raises `biasaudit.backends.openai_parse.OutputFault` for an unusable answer."""

    def close(self) -> None: ...


ProviderFactory = Callable[[Any, RuntimeConfig], "BatchProvider | None"]
"""(built backend, run-time settings) -> its batch provider, or None."""


@dataclass(frozen=True)
class BatchHook:
    """A backend kind's batch provider: how it is made, which probe kinds it batches, and
    why the others are not (said at validate)."""

    factory: ProviderFactory
    kinds: frozenset[str]
    why_not: str


class _Registry:
    def __init__(self) -> None:
        self._by_kind: dict[str, BatchHook] = {}

    def add(self, backend_kind: str, factory: ProviderFactory, *, kinds: frozenset[str],
            why_not: str) -> None:
        self._by_kind[backend_kind] = BatchHook(factory, kinds, why_not)

    def has(self, backend_kind: str) -> bool:
        return backend_kind in self._by_kind

    def get(self, backend_kind: str) -> BatchHook | None:
        return self._by_kind.get(backend_kind)

    def kinds(self) -> list[str]:
        return sorted(self._by_kind)


BATCH_PROVIDERS = _Registry()


def limits(provider: BatchProvider, cfg: BatchConfig) -> tuple[int, int]:
    """Requests and bytes per batch: the user's bounds within the provider's."""
    return min(cfg.max_requests, provider.max_requests), min(cfg.max_bytes, provider.max_bytes)


def result_lines(client: httpx.Client, url: str, *, what: str, line_limit: int, total: int,
                 parse: Callable[[bytes], BatchResult]) -> Iterator[BatchResult]:
    """A provider's results file, streamed line by line and parsed by `parse`: each line
    bounded (`line_limit`) and the whole file too (`total`, after decompression); an HTTP
    failure or an oversized file is a BatchFault naming `what` (e.g. "GET results of b1")
    and the settings that bound it."""
    try:
        with client.stream("GET", url) as r:
            if r.status_code != 200:
                raise BatchFault(f"{what}: HTTP {r.status_code}")
            for raw in bounded_lines(r.iter_raw(), r.headers.get("Content-Encoding", ""), line_limit, total):
                if raw.strip():
                    yield parse(raw)
    except httpx.HTTPError as exc:
        raise BatchFault(f"{what}: {type(exc).__name__}") from None
    except BodyTooLarge as exc:
        raise BatchFault(f"{what}: {exc} (runtime.batch.max_result_bytes, runtime.limits.http_response_bytes)",
                         lasting=True) from None
