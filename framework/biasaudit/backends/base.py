"""The backend protocol, the response record, and the registry of backend kinds."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from biasaudit._util import interrupt
from biasaudit.data import StimulusSet
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.records.responses import Response as Response  # re-exported
from biasaudit.registry import BACKENDS as BACKENDS  # re-exported: backends register here
from biasaudit.spec import BaseModelConfig, ModelPrice, RuntimeConfig, RuntimeLimits

Emit = Callable[[Response], None]

# Set by the engine while a backend runs: called with the number of requests of the batch
# in progress that have just finished, before their batch is emitted, so the progress bar
# advances per request rather than per batch (a batch of long generations takes minutes).
items_finished: ContextVar[Callable[[int], None] | None] = ContextVar("items_finished", default=None)

# Set by the engine while a backend runs: called after every token step of a generation
# batch with (step, most steps the batch may take, rows in the batch), so a progress line
# shows that a batch whose rows have not ended yet is moving, and how long it may take.
token_step: ContextVar[Callable[[int, int, int], None] | None] = ContextVar("token_step", default=None)

# Set by the engine while a backend runs: a block under which the answers a backend emits,
# all of them already in hand (a finished batch, what an event loop handed over at once),
# are written in one transaction when the block ends (`Store.together`). Never to hold an
# answer back waiting for more: a kill loses only what was not yet written.
answers_together: ContextVar[Callable[[], AbstractContextManager[None]] | None] = ContextVar(
    "answers_together", default=None)


@contextmanager
def together() -> Iterator[None]:
    """Emit the answers in hand inside this block: the engine writes them in one
    transaction (without an engine, e.g. a backend's own test, it does nothing)."""
    group = answers_together.get()
    if group is None:
        yield
        return
    with group():
        yield


class BatchWatch:
    """One generation batch, watched token step by token step: reports rows that have
    just ended (`items_finished`) and the step (`token_step`), and says whether to stop
    (an interrupt was requested: the caller then drops the batch, none of it is stored)."""

    def __init__(self, rows: int, max_steps: int) -> None:
        self.rows = rows
        self.max_steps = max_steps
        self.steps = 0
        self.ended = 0
        self.report = items_finished.get()
        self.tick = token_step.get()

    def step(self, newly_ended: int = 0) -> bool:
        self.steps += 1
        self.ended += newly_ended
        if newly_ended and self.report is not None:
            self.report(newly_ended)
        if self.tick is not None and self.ended < self.rows:  # all rows ended: the batch is done
            self.tick(self.steps, self.max_steps, self.rows)
        return interrupt.requested()


class RowsFinished:
    """A transformers stopping criterion (called after each generated token) that reports
    rows ending and token steps through a `BatchWatch`, and stops the whole batch once an
    interrupt is requested (every row "done": `generate` returns after this token step)."""

    def __init__(self, end_ids: set[int], watch: BatchWatch) -> None:
        self.end_ids = sorted(end_ids)
        self.watch = watch
        self.done: Any = None

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        ended = torch.isin(input_ids[:, -1], torch.tensor(self.end_ids, device=input_ids.device))
        if self.done is None:
            self.done = torch.zeros_like(ended)
        new = int((ended & ~self.done).sum())
        self.done |= ended
        stop = self.watch.step(new)
        return torch.full_like(ended, stop)


@contextmanager
def stoppable(model: Any) -> Iterator[None]:
    """While active, each module of the torch `model` checks the stop flag before its
    forward pass (PyTorch's forward pre-hooks): an interrupt takes effect at the next layer
    even inside one long forward pass (the prefill of a batch of long prompts, a first
    step on a loaded machine), not only between token steps or batches. The work in
    progress is dropped: KeyboardInterrupt leaves `model.generate` or the scoring pass."""

    def check(module: Any, args: Any) -> None:
        interrupt.check()

    # (a stand-in without torch modules, e.g. a test double, is run as it is)
    handles = [m.register_forward_pre_hook(check) for m in model.modules()] if hasattr(model, "modules") else []
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def run_in_batches(
    requests: Sequence[Request], size: int, answer: Callable[[list[Request]], Sequence[JSONObject]], emit: Emit
) -> None:
    """Answer requests batch by batch and emit each result as its batch finishes; a batch
    that raises (out of memory, bad input) is recorded as failed, never dropped."""
    reqs = list(requests)
    step = max(1, size)
    run_batches((reqs[i:i + step] for i in range(0, len(reqs), step)), answer, emit)


def token_budget_batches(requests: Sequence[Request], lengths: Sequence[int], budget: int) -> list[list[Request]]:
    """Dynamic batches: requests sorted by length, each batch as large as fits in `budget`
    padded tokens (rows x longest row), so short sequences run in large batches and long
    ones in small batches; a request longer than the budget runs alone."""
    order = sorted(range(len(requests)), key=lambda i: lengths[i])
    batches: list[list[Request]] = []
    batch: list[Request] = []
    for i in order:
        if batch and (len(batch) + 1) * lengths[i] > budget:
            batches.append(batch)
            batch = []
        batch.append(requests[i])
    if batch:
        batches.append(batch)
    return batches


def run_batches(batches: Iterable[list[Request]], answer: Callable[[list[Request]], Sequence[JSONObject]],
                emit: Emit) -> None:
    """`run_in_batches` for batches already formed (e.g. by `token_budget_batches`)."""
    import time

    for batch in batches:
        interrupt.check()  # an interrupt requested while the last batch was emitted
        t0 = time.perf_counter()
        try:
            outs = answer(batch)
        except (RuntimeError, ValueError) as exc:
            with together():
                for r in batch:
                    emit(Response(key=r.key, status="failed", error=f"{type(exc).__name__}: {str(exc)[:200]}"))
            continue
        dt = (time.perf_counter() - t0) / len(batch)
        stopped: KeyboardInterrupt | None = None
        with together():  # the whole batch has been answered: one write
            for r, o in zip(batch, outs, strict=True):
                try:
                    emit(Response(key=r.key, status="ok", output=o, latency_s=dt))
                except KeyboardInterrupt as exc:  # Ctrl-C: hand over the rest of the batch first
                    stopped = exc
        if stopped is not None:
            raise stopped


class Backend(Protocol):
    """A model that answers requests. `execute` calls `emit` once per request, as each
    finishes, so the engine can commit results as they arrive."""

    supports: frozenset[str]

    def execute(self, requests: Sequence[Request], emit: Emit) -> None: ...

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        """Run-time settings that do not change answers (batch size, token budget, prefix
        cache): given at build, and again when a sweep or suite reuses a loaded backend."""

    def close(self) -> None: ...


C = TypeVar("C", bound=BaseModelConfig)


@dataclass(frozen=True)
class BackendKind(Generic[C]):
    """A backend: its config model (one member of `spec.ModelConfig`, the union
    discriminated by `backend`), how its identity is read from that config, and how it is
    built from it with the run-time settings (`Backend.apply_runtime` takes them again when
    a loaded backend is reused)."""

    config: type[C]
    supports: frozenset[str]
    identity: Callable[[C], JSONObject]
    build: Callable[[C, RuntimeConfig], Backend]
    local: bool
    """True when requests run in this process (batching), False for remote (concurrency)."""
    label_logprobs: bool = False
    """Scores given answer tokens in-process (`choice_logprobs`), as `llm_nli` needs."""
    refused_why: str = ""
    """Why the probe kinds it lacks cannot be offered (said when a spec asks for one)."""
    keep_loaded: bool = False
    """A built instance is kept for the process and reused with each run's settings
    (`apply_runtime`): a model loaded into memory, loaded once per sweep or suite."""
    variant: Callable[[C], BackendKind[C] | None] | None = None
    """The kind that really runs this config when its settings choose another way of
    running the same model (a local GGUF served by a managed engine), else None."""
    check_stimuli: Callable[[C, StimulusSet, RuntimeLimits], None] | None = None
    """What the config can be checked against only once the stimuli are read (a decisions
    file holding one row per stimulus), before the run; raises a `BackendError`."""
    billed: bool = False
    """Answers are billed by the token (behind an API): the plan shows their cost and the
    report's cover the tokens used, at the config's stated price."""
    stated_price: Callable[[C], ModelPrice | None] | None = None
    """The price the user stated in the config (billed backends, and a test double standing
    in for one), which a money budget counts against."""
    first_load_note: Callable[[C], str] | None = None
    """What the first load of this config will do, said before it starts ("" nothing
    worth saying)."""
    selftest_only: bool = False
    """The self-test's stand-in: answers no real request, so `biasaudit run` refuses it."""

    def config_of(self, model: BaseModelConfig) -> C:
        """`model` as this backend's own config. The spec's discriminated union already
        chose the class by `backend`, so a mismatch is a bug, not a user error."""
        if not isinstance(model, self.config):
            raise TypeError(f"backend {model.backend!r} needs a {self.config.__name__}, got {type(model).__name__}")
        return model


def resolve_model_path(path: str, *, key: str = "model.path") -> Path | str:
    """`pkg:<package>[/sub/dir]` -> the directory of an installed package (not imported,
    since model-carrying packages may import optional dependencies); a local path ->
    Path; anything else is returned unchanged (a hub id)."""
    if path.startswith("pkg:"):
        pkg, _, sub = path[4:].partition("/")
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise BackendError(
                f"python package {pkg!r} is not installed",
                key=key,
                hint="run `make setup` (it installs the embedded models)",
            )
        base = Path(next(iter(spec.submodule_search_locations)))
        return base / sub if sub else base
    p = Path(path).expanduser()
    if p.exists():
        return p.resolve()
    if path.startswith(("/", "./", "../", "~")) or path.count("/") > 1:
        raise BackendError(f"model directory not found: {path}", key=key, hint="check the path")
    if not hub_cached(path):
        raise BackendError(
            f"model {path!r} is neither a local directory nor in the local Hugging Face cache",
            key=key,
            hint="models are never downloaded at run time; give a local directory",
        )
    return path


def hub_cached(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # not a valid repo id
        return False
    return isinstance(found, str)
