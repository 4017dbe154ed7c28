"""Sequential stopping (`runtime.sequential`): run the stimuli in a seeded order, look at
every threshold each `look_every` stimuli, and stop once every threshold is decided.

Each look is an ordinary run of the stimuli seen so far: the plan restricted to them, its
requests answered from the cache or the model (so a killed run resumes without repeating
a call, and reaches the same looks with the same numbers), coded, measured and judged at
the look's nominal level (`verdicts.sequential`). A threshold decided at a look keeps that
verdict (the group-sequential design stops for it there); the others are judged again at
the next look, and the last look spends what is left of the error rate. Stimuli after the
stopping look are recorded as not run, not as failures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from biasaudit._util.progress import stage
from biasaudit.backends import Backend
from biasaudit.engine import execute_plan
from biasaudit.errors import SpecError
from biasaudit.plan import Plan
from biasaudit.records.execution import ExecutionStats
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.responses import Response
from biasaudit.records.sequential import Look, LookThreshold, SequentialRecord
from biasaudit.records.verdict import VerdictRecord
from biasaudit.spec import SequentialConfig, ThresholdSpec
from biasaudit.stats.sequential import Boundaries, boundaries, look_sizes
from biasaudit.store import Store
from biasaudit.verdicts.sequential import look_level, look_verdicts
from biasaudit.verdicts.thresholds import resolve

if TYPE_CHECKING:  # the pipeline hands its stages in (it calls this module: no import cycle)
    from biasaudit.runner.pipeline import Coded, Prepared

MAX_LOOKS = 200

# One look's coding and metrics (`pipeline.code` then `pipeline.measure`): the run
# restricted to the stimuli seen, their responses, counts to add to, offline or not.
CodeAndMeasure = Callable[["Prepared", dict[str, Response], ExecutionStats, bool],
                          tuple["Coded", dict[str, MetricResult]]]


@dataclass
class SequentialOutcome:
    """What the looks leave for the report: the run restricted to the stimuli it took."""

    prep: Prepared
    responses: dict[str, Response]
    stats: ExecutionStats
    coded: Coded
    results: dict[str, MetricResult]
    """The metrics over the stimuli run (the last look's)."""
    verdicts: list[VerdictRecord]
    """Per threshold: the verdict of the look that decided it, else of the last look."""
    record: SequentialRecord


def stimulus_order(prep: Prepared) -> list[str]:
    """The order the run takes its stimuli in: a permutation seeded by `runtime.seed`, so
    the first stimuli are a random sample of all (a data file sorted by category would
    otherwise make the early looks measure one category), and a rerun with the same seed
    looks at the same stimuli."""
    ids = [s.id for s in prep.stimuli.stimuli]
    perm = np.random.default_rng(prep.composed.config.runtime.seed).permutation(len(ids))
    return [ids[i] for i in perm]


def restrict(prep: Prepared, keep: set[str]) -> Prepared:
    """`prep` with only the stimuli in `keep` (their items, requests; same cells)."""
    items = [it for it in prep.plan.items if it.stimulus in keep]
    requests = {it.key: prep.plan.requests[it.key] for it in items}
    stimuli = prep.stimuli.model_copy(update={"stimuli": [s for s in prep.stimuli.stimuli if s.id in keep]})
    plan = Plan(cells=prep.plan.cells, stimuli=stimuli, items=items, requests=requests, identity=prep.plan.identity,
                kind=prep.plan.kind, notes=prep.plan.notes)
    return dataclasses.replace(prep, stimuli=stimuli, plan=plan)


def schedule(planned: int, seq: SequentialConfig) -> list[int]:
    """The stimulus counts of the looks of a run of `planned` stimuli, checked (before any
    model call or file write: `pipeline.prepare`)."""
    assert seq.look_every is not None
    sizes = look_sizes(planned, seq.look_every, seq.max_looks)
    if len(sizes) > MAX_LOOKS:
        raise SpecError(f"{len(sizes)} looks (one every {seq.look_every} of {planned} stimuli); at most {MAX_LOOKS}",
                        key="runtime.sequential.look_every",
                        hint=f"set runtime.sequential.look_every={-(-planned // MAX_LOOKS)} or more, "
                             "or runtime.sequential.max_looks")
    return sizes


def threshold_label(t: ThresholdSpec) -> str:
    band = f"[{'-inf' if t.min is None else f'{t.min:g}'}, {'inf' if t.max is None else f'{t.max:g}'}]"
    return f"{t.metric} ({t.over}) in {band}"


def _add(total: ExecutionStats, part: ExecutionStats) -> None:
    for k in ("calls", "new_failures", "seconds", "model_load_s", "model_loads", "coding_calls", "coding_s",
              "embedding_calls"):
        setattr(total, k, getattr(total, k) + getattr(part, k))


def run_sequential(prep: Prepared, store: Store, backend_factory: Callable[[], Backend] | None,
                   code_and_measure: CodeAndMeasure, *, retry_failed: bool = False, progress: bool = True,
                   who: str = "the model", load_note: str = "") -> SequentialOutcome:
    """The looks of a sequential run (`backend_factory=None`: from the store only, as a
    re-render does; the looks and the stop are the same)."""
    cfg = prep.composed.config
    seq = cfg.runtime.sequential
    assert seq.look_every is not None
    planned = len(prep.stimuli.stimuli)
    thresholds = cfg.thresholds
    # nothing to decide: one look at every stimulus (looking earlier could never stop the run)
    sizes = schedule(planned, seq) if thresholds else [planned]
    order = stimulus_order(prep)
    fractions = [s / planned for s in sizes]

    @cache
    def bounds_for(alpha: float) -> Boundaries:
        return boundaries(fractions, alpha, seq.spending)

    decided: dict[int, tuple[VerdictRecord, int]] = {}
    looks: list[Look] = []
    responses: dict[str, Response] = {}
    total = ExecutionStats()
    last: tuple[Prepared, Coded, dict[str, MetricResult], list[VerdictRecord], ExecutionStats] | None = None
    stop = len(sizes) - 1
    for k, size in enumerate(sizes):
        sub = restrict(prep, set(order[:size]))
        todo = {key: r for key, r in sub.plan.requests.items() if key not in responses}
        new_plan = dataclasses.replace(sub.plan, requests=todo)
        stage("look %d/%d: %d of %d stimuli (%d new requests)", k + 1, len(sizes), size, planned, len(todo))
        got, st = execute_plan(new_plan, store, backend_factory, retry_failed=retry_failed, progress=progress,
                               who=who, load_note=load_note)
        responses.update(got)
        look_stats = ExecutionStats()
        sub_responses = {key: responses[key] for key in sub.plan.requests}
        coded, results = code_and_measure(sub, sub_responses, look_stats, backend_factory is None)
        _add(total, st)
        _add(total, look_stats)
        verdicts = look_verdicts(thresholds, results, bounds_for, k)
        rows = []
        for i, (t, v) in enumerate(zip(thresholds, verdicts, strict=True)):
            here = i not in decided and v.verdict in ("PASS", "FAIL")
            if here:
                decided[i] = (v, k)
            res, name = resolve(t.metric, results)
            _, spent = look_level(res.estimates[name], bounds_for, k)
            verdict, reason = v.verdict, v.reason
            if i in decided and not here:  # decided earlier: the design stopped for it there
                verdict = decided[i][0].verdict
                reason = f"kept from look {decided[i][1] + 1} (this look's interval alone: {v.verdict})"
            rows.append(LookThreshold(threshold=threshold_label(t), value=v.estimate.value, ci_low=v.estimate.ci_low,
                                      ci_high=v.estimate.ci_high, level=v.estimate.level, spent=spent,
                                      n=v.estimate.n, verdict=verdict, reason=reason, decided_here=here,
                                      cell=v.cell))
        looks.append(Look(index=k + 1, stimuli=size, fraction=size / planned, thresholds=rows))
        last = (sub, coded, results, verdicts, look_stats)
        if thresholds and len(decided) == len(thresholds):
            stop = k
            break
    assert last is not None
    sub, coded, results, verdicts, look_stats = last
    final = [decided[i][0] if i in decided else v for i, v in enumerate(verdicts)]
    size = sizes[stop]
    if not thresholds:
        reason = "the spec has no thresholds: nothing to decide, every stimulus was run"
    elif stop < len(sizes) - 1:
        reason = (f"every threshold was decided by look {stop + 1} of {len(sizes)} ({size} of {planned} stimuli); "
                  f"the other {planned - size} stimuli were not run")
    elif len(decided) == len(thresholds):
        reason = "every threshold was decided, the last at the final look (every planned stimulus)"
    else:
        left = len(thresholds) - len(decided)
        reason = f"the final look (every planned stimulus) left {left} threshold(s) undecided: INCONCLUSIVE"
    stage("sequential: stopped at look %d of %d: %s", stop + 1, len(sizes), reason)
    stats = final_stats(sub, responses, total, look_stats)
    record = SequentialRecord(
        look_every=seq.look_every, spending=seq.spending, planned_looks=sizes, planned=planned, run=size,
        not_run=planned - size, not_run_ids=order[size:], order_seed=cfg.runtime.seed, looks=looks,
        stopped_at=stop + 1, stopped_early=stop < len(sizes) - 1, reason=reason)
    return SequentialOutcome(prep=sub, responses={k: responses[k] for k in sub.plan.requests}, stats=stats,
                             coded=coded, results=results, verdicts=final, record=record)


def final_stats(sub: Prepared, responses: Mapping[str, Response], total: ExecutionStats,
                 last_look: ExecutionStats) -> ExecutionStats:
    """The run's counts over the stimuli it took: requests and failures as stored now;
    calls, seconds and loads summed over the looks; coding requests of the last look (it
    coded every unit of the run)."""
    stats = ExecutionStats(requests=len(sub.plan.requests), plan_items=sub.plan.n_items)
    kinds: dict[str, int] = {}
    for key in sub.plan.requests:
        r = responses[key]
        if r.status == "failed":
            kinds[r.error_kind or "other"] = kinds.get(r.error_kind or "other", 0) + 1
    stats.failures = sum(kinds.values())
    stats.failures_by_kind = dict(sorted(kinds.items()))
    stats.answered = stats.requests - stats.failures
    for k in ("calls", "new_failures", "seconds", "model_load_s", "model_loads", "coding_calls", "coding_s",
              "embedding_calls"):
        setattr(stats, k, getattr(total, k))
    stats.cache_hits = stats.requests - min(stats.calls, stats.requests)
    stats.coding_requests = last_look.coding_requests
    stats.coding_cache_hits = max(0, stats.coding_requests - stats.coding_calls)
    stats.embedding_cache_hits = last_look.embedding_cache_hits
    return stats


__all__ = ["SequentialOutcome", "final_stats", "restrict", "run_sequential", "schedule", "stimulus_order"]
