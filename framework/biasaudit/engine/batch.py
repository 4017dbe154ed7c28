"""Answer requests through a provider's batch API (`runtime.batch.enabled`).

The requests not in the cache are written as the provider's batch file in batches within
its limits (requests and bytes), submitted, and each batch id is committed to the cache
with the requests it holds before anything else happens (the requests are committed
first, under a tag sent with the batch, so a kill before the id is kept is found again
by asking the provider for that tag: store/batches.py). Then the open batches are polled
(the wait between polls grows by half, up to `max_poll_s`) and each ended batch's results
are stored as they are read. A killed run finds its open batches in the cache and polls
them: a request already in an open batch is never submitted again.

Failures are counted by kind. Those a new batch may cure (the batch expired or was
cancelled, 429, 5xx, a request the results do not mention) go into a new batch while
`runtime.batch.retry` allows; the rest, and those past it, are stored as failures like any
other model failure (kind and reason), never dropped.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from biasaudit._util import interrupt
from biasaudit._util.progress import seconds_text, stage
from biasaudit.backends.batch_base import (
    BATCH_PROVIDERS,
    TRANSIENT_KINDS,
    BatchFault,
    BatchProvider,
    BatchResult,
    BatchState,
    limits,
)
from biasaudit.backends.openai_parse import OutputFault
from biasaudit.errors import BackendError
from biasaudit.plan import Request, canonical_json
from biasaudit.records.json import JSONObject
from biasaudit.records.responses import Response
from biasaudit.spec import BatchConfig, RuntimeConfig
from biasaudit.store import Store
from biasaudit.store.batches import BatchLedger, Intent, OpenBatch

log = logging.getLogger(__name__)

HEARTBEAT_S = 300.0
"""Seconds between the lines saying the batches are still open."""

# What a request absent from an ended batch's results became, by the batch's status.
_ABSENT = {"expired": "batch_expired", "cancelled": "batch_canceled", "canceled": "batch_canceled",
           "failed": "batch_failed"}


@dataclass
class BatchTally:
    """What the batch path did in this run."""

    submitted: list[str] = field(default_factory=list)
    """Batch ids submitted in this run (a resumed run submits none for requests already in one)."""
    polled: list[str] = field(default_factory=list)
    """Batch ids whose results this run collected."""
    retried: Counter[str] = field(default_factory=Counter)
    """Requests put into a new batch, by the kind of failure."""


def batch_provider(backend: Any, identity: JSONObject | None) -> tuple[BatchProvider, BatchConfig] | None:
    """The backend's batch provider and settings when `runtime.batch.enabled` and its kind
    declares one (the kind is the identity's `backend`: a managed engine is `hf_causal`)."""
    runtime = getattr(backend, "runtime", None)
    if not isinstance(runtime, RuntimeConfig) or not runtime.batch.enabled or identity is None:
        return None
    hook = BATCH_PROVIDERS.get(str(identity.get("backend", "")))
    provider = None if hook is None else hook.factory(backend, runtime)
    return None if provider is None else (provider, runtime.batch)


def model_key(identity: JSONObject) -> str:
    return hashlib.sha256(canonical_json(identity).encode("utf-8")).hexdigest()[:32]


class BatchRun:
    def __init__(self, provider: BatchProvider, store: Store, cfg: BatchConfig, identity: JSONObject,
                 emit: Callable[[Response], None], *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.provider = provider
        self.store = store
        self.ledger = BatchLedger(store)
        self.cfg = cfg
        self.key = model_key(identity)
        self.emit = emit
        self.sleep = sleep
        self.clock = clock
        self.tally = BatchTally()
        self.want: set[str] = set()
        self.counts: Counter[str] = Counter()

    # -- submitting ------------------------------------------------------------------
    def _chunks(self, reqs: Sequence[Request]) -> list[list[tuple[Request, JSONObject]]]:
        max_n, max_b = limits(self.provider, self.cfg)
        out: list[list[tuple[Request, JSONObject]]] = []
        cur: list[tuple[Request, JSONObject]] = []
        size = 0
        for r in reqs:
            line = self.provider.line(r.key, r)
            n = len(canonical_json(line).encode("utf-8")) + 1
            if n > max_b:
                self._put(r, Response(key=r.key, status="failed", error_kind="http_error",
                                      error=f"the request is {n} bytes, over one batch's limit of {max_b}"))
                continue
            if cur and (len(cur) >= max_n or size + n > max_b):
                out.append(cur)
                cur, size = [], 0
            cur.append((r, line))
            size += n
        if cur:
            out.append(cur)
        return out

    def submit(self, reqs: Sequence[Request], attempt: int) -> list[OpenBatch]:
        made = []
        for chunk in self._chunks(reqs):
            tag = f"biasaudit-{uuid.uuid4().hex}"
            # committed before the submit: a kill between the provider's answer and the
            # record below leaves this intent, looked up by its tag when the run resumes
            self.ledger.intend(tag, self.provider.name, self.key, attempt, [r for r, _ in chunk])
            made.append(self._send(tag, {r.key: r for r, _ in chunk}, [line for _, line in chunk], attempt))
        return made

    def _send(self, tag: str, reqs: dict[str, Request], lines: Sequence[JSONObject], attempt: int) -> OpenBatch:
        try:
            batch_id = self.provider.submit(lines, tag)
        except BatchFault as exc:
            raise BackendError(f"submitting a batch to {self.provider.name} failed: {exc}", key="runtime.batch",
                               hint="check the provider's batch API (model.base_url, the key); batches already "
                                    "submitted are kept and polled when the run is started again, and one whose "
                                    "submit got no answer is looked up at the provider first") from None
        # committed before anything else: a kill from here on resumes by polling this batch
        self.ledger.record(tag, batch_id)
        self.tally.submitted.append(batch_id)
        stage("batch %s: %d requests submitted to %s (attempt %d)", batch_id, len(reqs), self.provider.name, attempt)
        return OpenBatch(batch_id, self.provider.name, attempt, reqs)

    def adopt(self, intents: Sequence[Intent]) -> list[OpenBatch]:
        """Batches committed as intents whose id was never recorded (a run killed between
        the submit and the record): each is looked up at the provider by its tag first;
        found, it is polled; not found after the whole listing, it is submitted (it never
        reached the provider). A provider that keeps no tag (Anthropic) cannot be asked:
        the intent is submitted again, said in a warning (that batch may be paid twice)."""
        if not intents:
            return []
        try:
            found = self.provider.find({i.tag for i in intents}, min(i.created for i in intents))
        except BatchFault as exc:
            raise BackendError(f"{len(intents)} batches of an earlier run may have been submitted to "
                               f"{self.provider.name} without their id being kept, and its batches cannot be listed "
                               f"now: {exc}", key="runtime.batch",
                               hint="run the same command again later: nothing is submitted until the provider's "
                                    "list of batches has been read") from None
        out = []
        for i in intents:
            batch_id = None if found is None else found.get(i.tag)
            if batch_id is not None:
                self.ledger.record(i.tag, batch_id)
                stage("batch %s: submitted by an earlier run that stopped before keeping its id; found at %s by "
                      "its tag: polled, not submitted again", batch_id, self.provider.name)
                out.append(OpenBatch(batch_id, self.provider.name, i.attempt, i.requests))
                continue
            if found is None:
                log.warning("a batch of %d requests may have reached %s before an earlier run stopped, and %s batches "
                            "cannot be looked up by a tag: submitted again (it may be paid twice)",
                            len(i.requests), self.provider.name, self.provider.name)
            lines = [self.provider.line(r.key, r) for r in i.requests.values()]
            out.append(self._send(i.tag, i.requests, lines, i.attempt))
        return out

    # -- storing -----------------------------------------------------------------
    def _put(self, req: Request, resp: Response) -> None:
        if req.key in self.want:
            self.want.discard(req.key)
            self.emit(resp)
        else:  # a request of another run of this model in the same batch: cached for it
            have = self.store.get_many([req.key]).get(req.key)
            if have is None or not have.ok:
                self.store.put(req, resp)

    def collect(self, batch: OpenBatch, st: BatchState, newer: set[str]) -> list[Request] | None:
        """Store the ended batch's results; return the requests to put into a new batch
        (None: its results could not be read now, poll again)."""
        got: dict[str, BatchResult] = {}
        try:
            for line in self.provider.results(batch.batch_id):
                if line.custom_id in batch.requests:
                    got[line.custom_id] = line
        except BatchFault as exc:
            if exc.lasting:
                raise BackendError(f"batch {batch.batch_id}: its results cannot be read: {exc}",
                                   key="runtime.batch.max_result_bytes",
                                   hint="raise the limit named and run again: the batch is kept and read again, "
                                        "not submitted again") from None
            log.warning("batch %s: results not read (%s): tried again at the next poll", batch.batch_id, exc)
            return None
        counts: Counter[str] = Counter()
        again: list[Request] = []
        # the batch's results are all in hand: stored in one write (`Store.together`)
        with self.store.together():
            for key, req in batch.requests.items():
                if key in newer:
                    continue  # resubmitted already (a run killed before this batch was closed)
                res = got.get(key)
                if res is None:
                    kind = _ABSENT.get(st.status, "batch_missing")
                    reason = f"not run: the batch {st.status}" + (f" ({st.note})" if st.note else "")
                elif res.body is not None:
                    try:
                        out = self.provider.decode(req, res.body)
                    except OutputFault as exc:
                        kind, reason = exc.kind, exc.reason
                    else:
                        counts["succeeded"] += 1
                        self._put(req, Response(key=key, status="ok", output={**out, "batch": batch.batch_id},
                                                attempts=batch.attempt))
                        continue
                else:
                    kind, reason = res.kind or "http_error", res.reason
                counts[kind] += 1
                if kind in TRANSIENT_KINDS and batch.attempt <= self.cfg.retry:
                    again.append(req)
                    self.tally.retried[kind] += 1
                else:
                    after = f" (after {batch.attempt} batches)" if batch.attempt > 1 else ""
                    self._put(req, Response(key=key, status="failed", error=f"{reason[:250]}{after}", error_kind=kind,
                                            attempts=batch.attempt))
        self.counts = counts
        return again

    # -- the loop ------------------------------------------------------------------
    def submitted_keys(self) -> set[str]:
        """The requests of this model's batches submitted earlier and still open."""
        return ({k for b in self.ledger.open_batches(self.key, self.provider.name) for k in b.requests}
                | {k for i in self.ledger.intents(self.key, self.provider.name) for k in i.requests})

    def run(self, pending: Sequence[Request]) -> None:
        self.want = {r.key for r in pending}
        every = self.ledger.open_batches(self.key, self.provider.name)
        open_ = [b for b in every if self.want & b.requests.keys()]
        if open_:
            stage("batches: %d submitted earlier still open (%s): polling them, not submitting again",
                  len(open_), ", ".join(b.batch_id for b in open_)[:200])
        open_ += self.adopt([i for i in self.ledger.intents(self.key, self.provider.name)
                             if self.want & i.requests.keys()])
        covered = {k for b in open_ for k in b.requests}
        fresh: list[Request] = []
        for r in pending:
            if r.key in covered:
                continue
            why = self.provider.check(r)
            if why is not None:
                self._put(r, Response(key=r.key, status="failed", error_kind="unsupported", error=why[:300]))
            else:
                fresh.append(r)
        open_ += self.submit(fresh, 1)
        t0, wait = self.clock(), self.cfg.poll_s
        shown = t0
        while open_:
            still: list[OpenBatch] = []
            states: Counter[str] = Counter()
            for b in open_:
                try:
                    st = self.provider.state(b.batch_id)
                except BatchFault as exc:
                    log.warning("batch %s: status not read (%s): polled again", b.batch_id, exc)
                    still.append(b)
                    continue
                if not st.ended:
                    states[st.status] += 1
                    still.append(b)
                    continue
                newer = {k for o in open_ if o.attempt > b.attempt for k in o.requests}
                again = self.collect(b, st, newer)
                if again is None:
                    still.append(b)
                    continue
                if again:
                    still += self.submit(again, b.attempt + 1)
                self.ledger.close_batch(b.batch_id, st.status, dict(self.counts))
                self.tally.polled.append(b.batch_id)
                stage("batch %s %s: %s", b.batch_id, st.status,
                      ", ".join(f"{n} {k}" for k, n in sorted(self.counts.items())) or "no results")
            open_ = still
            if not open_:
                break
            if self.clock() - t0 > self.cfg.max_wait_s:
                raise BackendError(
                    f"{len(open_)} batches still running after {seconds_text(self.cfg.max_wait_s)} "
                    f"({', '.join(b.batch_id for b in open_)[:160]})", key="runtime.batch.max_wait_s",
                    hint="run the same command again later: the batches are kept in the cache and polled, "
                         "not submitted again (or raise runtime.batch.max_wait_s)")
            if self.clock() - shown >= HEARTBEAT_S:  # hours of waiting: say now and then that it goes on
                shown = self.clock()
                stage("batches: %d open (%s), waiting %s so far", len(open_),
                      ", ".join(f"{n} {k}" for k, n in sorted(states.items())) or "status not read",
                      seconds_text(shown - t0))
            self._pause(wait)
            wait = min(wait * 1.5, self.cfg.max_poll_s)

    def _pause(self, seconds: float) -> None:
        """Sleep, a Ctrl-C taking effect within a quarter second."""
        end = self.clock() + seconds
        while (left := end - self.clock()) > 0:
            interrupt.check()
            self.sleep(min(left, 0.25))
        interrupt.check()
