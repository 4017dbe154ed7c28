"""Execute a plan: cache lookup, then the missing requests through the backend, with
results committed as they arrive, a progress bar, and counts of hits / calls / failures."""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

from biasaudit._util.progress import seconds_text, stage
from biasaudit._util.secrets import redact_obj
from biasaudit.backends import Backend, weights
from biasaudit.backends.base import answers_together, items_finished, token_step
from biasaudit.engine.answers import AnswerTable
from biasaudit.engine.batch import BatchRun, batch_provider
from biasaudit.engine.budget import Budget
from biasaudit.engine.interrupt import GracefulStop
from biasaudit.errors import StoreError
from biasaudit.plan import Plan, Request, canonical_json
from biasaudit.records.execution import ExecutionStats
from biasaudit.records.json import JSONObject
from biasaudit.records.responses import GenerateOutput, Response, parse_output
from biasaudit.store import Store

log = logging.getLogger(__name__)

LOAD_KIND = "model_load"




def execute_plan(
    plan: Plan,
    store: Store,
    backend_factory: Callable[[], Backend] | None,
    *,
    retry_failed: bool = False,
    progress: bool = True,
    who: str = "the model",
    load_note: str = "",
    budget: Budget | None = None,
) -> tuple[AnswerTable, ExecutionStats]:
    """Return every request's response. With `backend_factory=None`, answer only from the
    store (re-rendering a report), and fail if anything is missing. With a `budget`, the
    requests it cannot pay for are left unanswered (absent from the result; `budget.stopped`)."""
    results, stats = execute_requests(plan.requests, store, backend_factory, retry_failed=retry_failed,
                                      progress=progress, label="model calls", identity=plan.identity, who=who,
                                      load_note=load_note, budget=budget)
    stats.plan_items = plan.n_items
    return results, stats


def execute_requests(
    requests: Mapping[str, Request],
    store: Store,
    backend_factory: Callable[[], Backend] | None,
    *,
    retry_failed: bool = False,
    progress: bool = True,
    label: str = "model calls",
    identity: JSONObject | None = None,
    who: str = "the model",
    load_note: str = "",
    budget: Budget | None = None,
) -> tuple[AnswerTable, ExecutionStats]:
    """Answer `requests` from the store, then the rest through the backend. With the model's
    `identity`, the backend's measured throughput is recorded for `biasaudit plan`.
    `who` names the model in stage messages; `load_note` says what its first load does."""
    t0 = time.perf_counter()
    stats = ExecutionStats(requests=len(requests), plan_items=len(requests))
    # held compactly by the plan's positions (engine/answers.py), read from the store in
    # chunks (issue 42)
    results = AnswerTable(requests)
    # the provider's batch of each answer that came through one (counted at the end
    # without reading every answer back)
    batch_of: dict[str, str] = {}
    for k, resp in store.iter_many(requests):
        results[k] = resp
        _note_batch(batch_of, k, resp)
    pending = _Pending(requests, results, array("q", (
        at for at, k in enumerate(requests)
        if (s := results.status(k)) is None or (retry_failed and s == "failed"))))
    stats.cache_hits = len(requests) - len(pending)
    if budget is not None:  # answers earlier runs of this plan paid for count against the budget
        todo = {pending.key(i) for i in range(len(pending))}
        for k, resp in results.items():
            if k not in todo:
                budget.count_stored(requests[k], resp)
    if backend_factory is not None:
        stage("%s: %d requests, %d from cache, %d to call", label, len(requests), stats.cache_hits, len(pending))
    if pending:
        if backend_factory is None:
            raise StoreError(
                f"{len(pending)} of {len(requests)} responses are not in the store",
                key="runtime.cache",
                hint="run `biasaudit run` with the same spec and model to fill the cache",
            )
        backend = _load(backend_factory, store, identity, label, who, load_note, stats)
        bar = _progress(progress, len(pending), label)
        stop = GracefulStop()

        tally = _Tally()

        def emit(resp: Response) -> None:
            req = pending.take(resp.key)  # the one the backend was handed, when still at hand
            # scrubbed before storing: a server may echo the API key in an error body, and
            # may send text no file can hold (lone surrogates from `\ud800` escapes). The
            # output's JSON, which the store writes anyway, is what is searched: the record
            # is rebuilt only when something was replaced (issue 42: a copy of every answer)
            output, error = redact_obj(resp.output), redact_obj(resp.error)
            text = canonical_json(output) if output is not None else None
            if (text is not None and _SURROGATE.search(text)) or (error is not None and _SURROGATE.search(error)):
                output, error = storable(output), storable(error)
                text = canonical_json(output) if output is not None else None
            if output is not resp.output or error is not resp.error:
                resp = resp.model_copy(update={"error": error, "output": output})
            store.put(req, resp, output_json=text)
            results[resp.key] = resp
            _note_batch(batch_of, resp.key, resp)
            if budget is not None:
                budget.settle(req, resp)
            tally.add(req, resp)
            stats.calls += 1
            if resp.status == "failed":
                stats.new_failures += 1
            if bar is not None:
                bar.update(1)
            stop.check()  # Ctrl-C: stop once this response is committed (with its group)

        t_exec = time.perf_counter()
        token = items_finished.set(bar.partial if bar is not None else None)
        ticks = token_step.set(bar.tokens if bar is not None else None)
        grouped = answers_together.set(store.together)  # a finished batch: one write
        try:
            with stop:
                batched = batch_provider(backend, identity)
                if batched is not None and identity is not None:
                    run = BatchRun(batched[0], store, batched[1], identity, emit)
                    try:
                        run.run(_affordable_batch(pending, budget, run))
                    finally:
                        stats.batch_submitted = list(run.tally.submitted)
                        stats.batch_retried = dict(sorted(run.tally.retried.items()))
                        batched[0].close()
                else:
                    _dispatch(backend, pending, emit, budget)
                    if identity is not None:  # a batch's hours in a provider's queue measure no model's speed
                        tally.record(store, identity, time.perf_counter() - t_exec)
                stop.check()
        finally:
            answers_together.reset(grouped)
            token_step.reset(ticks)
            items_finished.reset(token)
            backend.close()
            if bar is not None:
                bar.close()
    # (with a budget that stopped the run, the requests not sent have no result)
    kinds = Counter(results[k].error_kind or "other" for k in requests if results.status(k) == "failed")
    stats.failures = sum(kinds.values())
    stats.answered = stats.requests - stats.failures
    stats.failures_by_kind = dict(sorted(kinds.items()))
    via = Counter(batch_of.values())
    stats.batch_answers, stats.batch_ids = sum(via.values()), sorted(via)
    results.seal()  # what is still open (unanswered requests in its block) compressed too
    stats.seconds = time.perf_counter() - t0
    return results, stats


def _note_batch(batch_of: dict[str, str], key: str, resp: Response) -> None:
    """Keep which provider batch answered `key` (an ok answer whose output names one)."""
    b = resp.output.get("batch") if resp.status == "ok" and resp.output is not None else None
    if b:
        batch_of[key] = str(b)
    else:
        batch_of.pop(key, None)


class _Pending(Sequence[Request]):
    """The requests still to answer, as a sequence that builds each `Request` from the
    plan's table when a backend reads it, held as their positions in the plan (issue 42:
    a list of the requests held every prompt of the run twice while the backend answered;
    a list of their keys, 120 bytes a request)."""

    # Requests handed to the backend and not yet answered, kept so that the answer's
    # `emit` need not build its request again from the table (a tenth of an instant run's
    # model-call stage). Bounded: a backend that reads far ahead (a whole batch file)
    # gets the rest built again when answered.
    HELD = 1024

    def __init__(self, requests: Mapping[str, Request], results: AnswerTable, positions: array[int]) -> None:
        self.requests = requests
        self.key_at = results.key_at
        self.positions = positions
        self.handed: dict[str, Request] = {}

    def key(self, i: int) -> str:
        return self.key_at(self.positions[i])

    def _hand(self, key: str) -> Request:
        req = self.requests[key]
        if len(self.handed) < self.HELD:
            self.handed[key] = req
        return req

    def take(self, key: str) -> Request:
        """The request an answer is for: the one handed out, or built again."""
        req = self.handed.pop(key, None)
        return req if req is not None else self.requests[key]

    @overload
    def __getitem__(self, i: int) -> Request: ...

    @overload
    def __getitem__(self, i: slice) -> list[Request]: ...

    def __getitem__(self, i: int | slice) -> Request | list[Request]:
        if isinstance(i, slice):
            return [self._hand(self.key_at(at)) for at in self.positions[i]]
        return self._hand(self.key(i))

    def __iter__(self) -> Iterator[Request]:
        return (self._hand(self.key_at(at)) for at in self.positions)

    def __len__(self) -> int:
        return len(self.positions)


def _affordable_batch(pending: Sequence[Request], budget: Budget | None, run: BatchRun) -> Sequence[Request]:
    """With a budget, the requests a batch may carry: those already in a batch submitted
    by an earlier run first (committed spend: reserved whatever the limit), then as many
    others as their worst case fits, at the batch price. A batch is one window: nothing
    is in flight beyond what is reserved, so the spend stays within the budget unless the
    provider counts more input tokens than the plan's estimate."""
    if budget is None:
        return pending
    budget.batch_price = True
    submitted = run.submitted_keys()
    first = [r for r in pending if r.key in submitted]
    rest = [r for r in pending if r.key not in submitted]
    for r in first:
        budget.reserve(r, force=True)
    out = list(first)
    for i, r in enumerate(rest):
        if not budget.reserve(r):
            budget.stop(len(rest) - i)
            stage("budget: stopped before %s: %d calls not made", budget.stopped_by, len(rest) - i)
            break
        out.append(r)
    return out


def _dispatch(backend: Backend, pending: Sequence[Request], emit: Callable[[Response], None],
              budget: Budget | None) -> None:
    """Send `pending` through the backend: all at once, or with a budget in windows of at
    most `budget.window` requests, each reserved in full before it goes (engine/budget.py);
    the first request that cannot be reserved once its window's answers are settled stops
    the run there."""
    if budget is None:
        backend.execute(pending, emit)
        return
    i = 0
    while i < len(pending):
        wave: list[Request] = []
        while i < len(pending) and len(wave) < budget.window and budget.reserve(pending[i]):
            wave.append(pending[i])
            i += 1
        if not wave:
            budget.stop(len(pending) - i)
            stage("budget: stopped before %s: %d calls not made", budget.stopped_by, len(pending) - i)
            return
        try:
            backend.execute(wave, emit)
        finally:
            budget.release()


_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(obj: Any) -> Any:
    """`obj` with every lone surrogate replaced by U+FFFD: SQLite, JSON files and reports
    are UTF-8, which cannot encode them (a copy: called only when one was found)."""
    if isinstance(obj, str):
        return _SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, dict):
        return {storable(k): storable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [storable(v) for v in obj]
    return obj


# Loads shorter than this were answered by a model already in memory (or a backend with
# nothing to load): not a measurement of loading the model.
_REAL_LOAD_S = 0.5


LOAD_HEARTBEAT_S = 15.0
"""How often a model load that is still running says so (a first GGUF dequantization can
take minutes on a loaded machine, and a silent minute reads as a hang)."""


@contextlib.contextmanager
def _still_loading(label: str, who: str, last_s: float | None) -> Iterator[None]:
    """While the block runs, a stage line every `LOAD_HEARTBEAT_S`: the time so far and,
    when an earlier load of this model was timed, that time beside it."""
    done = threading.Event()
    t0 = time.perf_counter()

    def beat() -> None:
        while not done.wait(LOAD_HEARTBEAT_S):
            so_far = seconds_text(time.perf_counter() - t0)
            then = f"; the last load took {seconds_text(last_s)}" if last_s else ""
            stage("%s: still loading %s (%s so far%s)", label, who, so_far, then)

    thread = threading.Thread(target=beat, name="biasaudit-load-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=1.0)


def _load(factory: Callable[[], Backend], store: Store, identity: JSONObject | None, label: str, who: str,
          first_note: str, stats: ExecutionStats) -> Backend:
    """Build the backend, saying how long the last real load of this model took (kept in the
    store's throughput table under the pseudo-kind `model_load`), and record this one."""
    last = store.throughput(identity, LOAD_KIND, last=1) if identity is not None else None
    hint = f" (last load took {seconds_text(last.seconds)})" if last else (f" ({first_note})" if first_note else "")
    t0 = time.perf_counter()
    stage("%s: loading %s%s", label, who, hint)
    before = weights.loads()
    with _still_loading(label, who, last.seconds if last else None):
        backend = factory()
    stats.model_load_s = time.perf_counter() - t0
    stats.model_loads = weights.loads() - before
    if stats.model_loads == 0 and getattr(backend, "model", None) is not None:
        stage("%s: %s already loaded in this process: its weights are reused", label, who)
    if stats.model_load_s >= _REAL_LOAD_S:
        stage("%s: %s loaded in %s", label, who, seconds_text(stats.model_load_s))
        if identity is not None:
            store.record_throughput(identity, LOAD_KIND, 1, stats.model_load_s, 0, 0)
    return backend


class _Tally:
    """What the throughput table keeps of the calls made, counted as each answer is
    stored (issue 42: a second pass over the pending requests built every request and
    response again)."""

    def __init__(self) -> None:
        self.kinds: set[str] = set()
        self.calls = self.ok = self.tokens_in = self.tokens_out = 0

    def add(self, req: Request, resp: Response) -> None:
        self.kinds.add(req.kind)
        self.calls += 1
        # the input half of `plan.estimated_tokens` (its output half reads the decoding
        # parameters through pydantic, which this tally never uses)
        self.tokens_in += max(1, (len(req.text or "") + len(req.text_pair or "")
                                  + sum(len(m["content"]) for m in req.messages or [])) // 4)
        if resp.status != "ok":
            return
        self.ok += 1
        # only a generation has output tokens (a score or a distribution is read from the prompt)
        if req.kind == "generate" and resp.output is not None:
            n = resp.output.get("output_tokens")
            if type(n) is int and n >= 0 and isinstance(resp.output.get("text"), str):
                self.tokens_out += n  # what `GenerateOutput` reads, without validating it
                return
            try:
                g = parse_output(GenerateOutput, resp)
            except ValueError:  # a malformed answer: the coding stage says so; no tokens here
                g = None
            self.tokens_out += g.output_tokens if g is not None else 0

    def record(self, store: Store, identity: JSONObject, seconds: float) -> None:
        if len(self.kinds) != 1 or not self.ok or seconds <= 0:
            return  # mixed kinds or nothing answered: no rate worth keeping
        store.record_throughput(identity, next(iter(self.kinds)), self.calls, seconds, self.tokens_in,
                                self.tokens_out)


# Seconds between the lines saying how far a generation batch has got (its rows end
# only at their end token: a batch of long answers shows no finished request for minutes).
HEARTBEAT_S = 10.0


def duration_text(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


class _Bar:
    """A progress bar over requests. Backends that finish requests inside a batch report
    them early (`partial`); the batch's later emits of those requests do not count twice.
    Generation batches also report each token step (`tokens`), shown with how long the
    batch, and the rest, can still take."""

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.credited = 0
        self.batch_t0 = self.last_shown = time.perf_counter()
        self.batch_done = 0
        self._start()

    def tokens(self, step: int, max_steps: int, rows: int) -> None:
        now = time.perf_counter()
        if step == 1:  # a new batch: its first step includes reading the prompts
            self.batch_t0, self.batch_done = now, self.done
        if now - self.last_shown < self._every():
            return
        self.last_shown = now
        per_step = (now - self.batch_t0) / step
        batch_left = max(0, max_steps - step) * per_step
        # an upper bound: rows that end early shorten it; later batches are assumed as large
        later = max(0, self.total - self.batch_done - rows)
        rest = batch_left + -(-later // max(1, rows)) * max_steps * per_step
        self._detail(f"generating {rows} answer{'s' if rows != 1 else ''}: token {step} of at most {max_steps}, "
                     f"{per_step:.2g} s a token; this batch ends within {duration_text(batch_left)}, "
                     f"all {self.total - self.done} left within {duration_text(rest)}")

    def _every(self) -> float:
        return 0.5

    def _detail(self, text: str) -> None:
        self.p.update(self.task, detail=text)

    def _start(self) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.p = Progress(
            TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            TextColumn("{task.fields[detail]}"), transient=False,
        )
        self.p.start()
        self.task = self.p.add_task("calls", total=self.total, detail="")

    def _advance(self, n: int) -> None:
        self.done += n
        self.p.advance(self.task, n)

    def partial(self, n: int) -> None:
        n = min(n, self.total - self.done)
        self.credited += n
        self._advance(n)

    def update(self, n: int) -> None:
        early = min(self.credited, n)
        self.credited -= early
        if n - early:
            self._advance(n - early)

    def close(self) -> None:
        self.p.refresh()  # a notebook widget is redrawn only by the refresh thread: show the final count
        self.p.stop()


class _LineBar(_Bar):
    """Without a terminal (CI logs): a stage line at every tenth of the way."""

    def _start(self) -> None:
        self.shown = 0

    def _every(self) -> float:
        return HEARTBEAT_S

    def _detail(self, text: str) -> None:
        stage("%s: %d/%d done; %s", self.label, self.done, self.total, text)

    def _advance(self, n: int) -> None:
        self.done += n
        tenth = self.done * 10 // self.total
        if tenth > self.shown:
            self.shown = tenth
            stage("%s: %d/%d done", self.label, self.done, self.total)

    def close(self) -> None:
        pass


def _progress(enabled: bool, total: int, label: str) -> _Bar | None:
    """rich's bar on a terminal and in a Jupyter notebook (where rich draws it as a widget:
    a kernel's stderr is no terminal), stage lines elsewhere (CI logs)."""
    if not enabled or total <= 0:
        return None
    from biasaudit._util.jupyter import in_notebook

    return _Bar(total, label) if sys.stderr.isatty() or in_notebook() else _LineBar(total, label)
