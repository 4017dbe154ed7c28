"""What the execution stage counted: requests, cache hits, calls, failures by kind, seconds. Data only."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import ClassVar

from pydantic import ConfigDict


@dataclass
class ExecutionStats:
    # read in summary.json and manifest.json: a key no version wrote is refused, as in every
    # record (an earlier layout is read through records/upgrade), never silently dropped
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    requests: int = 0
    """Unique requests in the plan (identical requests across cells count once)."""
    plan_items: int = 0
    cache_hits: int = 0
    calls: int = 0
    """Requests sent to the backend in this run."""
    answered: int = 0
    """Requests whose final stored result is an answer (answered + failures = requests)."""
    failures: int = 0
    """Requests whose final stored result is a failure."""
    failures_by_kind: dict[str, int] = field(default_factory=dict)
    """Failures counted by their kind (timeout, rate_limited, empty...; `other` when the
    backend gave none); the counts add up to `failures`."""
    new_failures: int = 0
    seconds: float = 0.0
    model_load_s: float = 0.0
    model_loads: int = 0
    """Model weights this run loaded (0: every model it needed was already loaded in this
    process, e.g. by an earlier suite member or a variant with another system prompt)."""
    coding_requests: int = 0
    """Requests of the coding stage (judges, parsers, claim checks...), unique per layer."""
    coding_calls: int = 0
    """Coding requests sent to a model in this run."""
    coding_cache_hits: int = 0
    embedding_calls: int = 0
    """Strings sent to the embedder (not the model under test) in this run."""
    embedding_cache_hits: int = 0
    coding_s: float = 0.0
    """Seconds of the coding stage (judges, NLI, embedder, rules), measured around it."""
    run_stage_s: float = 0.0
    """Seconds of the whole run stage: the model calls (`seconds`) and the coding stage."""
    input_tokens: int = 0
    """Input (prompt) tokens the provider reported for the run's answers (its `usage`)."""
    output_tokens: int = 0
    """Output (completion) tokens the provider reported for the run's answers."""
    usage_reported: int = 0
    """Answers whose provider reported the tokens used."""
    usage_missing: int = 0
    """Answers whose provider reported no usage (local models, replays, servers that give
    none): their tokens are the plan's estimates below."""
    estimated_input_tokens: int = 0
    """The plan's estimate (characters / 4) of the input tokens of the `usage_missing` answers."""
    estimated_output_tokens: int = 0
    """The plan's bound (`max_tokens` for a generation) on their output tokens."""

    batch_answers: int = 0
    """Answers that came through a provider's batch API (`runtime.batch`), this run's or
    cached from an earlier one."""
    batch_ids: list[str] = field(default_factory=list)
    """The batches those answers came from."""
    batch_input_tokens: int = 0
    """Of the input tokens (reported or estimated), those of the batch answers."""
    batch_output_tokens: int = 0
    """Of the output tokens (reported or estimated), those of the batch answers."""
    batch_submitted: list[str] = field(default_factory=list)
    """Batches this run submitted (a resumed run polls the earlier ones and submits none for them)."""
    batch_retried: dict[str, int] = field(default_factory=dict)
    """Requests this run put into a new batch, by the kind of failure that sent them back
    (`runtime.batch.retry`); their final result is counted with the rest."""

    def as_dict(self) -> dict[str, float | int | dict[str, int] | list[str]]:
        return asdict(self)
