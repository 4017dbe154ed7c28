"""What a run or a sweep will cost before it starts: counts, unique requests, cache
status, estimated tokens, and estimated time from throughput measured in earlier runs.

Plans are counted by streaming (`plan.stream`): jobs of a sweep that render the same
payloads (same spec, stimuli, factors, probe and seed; only the model or metric settings
differ) are rendered once and hashed per model, and jobs with the same model identity
share their requests, as they will share the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from biasaudit.backends import kind_of
from biasaudit.coding.cost import LayerEstimate, bounds
from biasaudit.plan import canonical_json
from biasaudit.plan.footprint import Footprint, estimate_footprint, fmt_bytes
from biasaudit.plan.stream import PlanCount, PlanCounts, count_plans
from biasaudit.records.json import JSONObject
from biasaudit.spec.compose import Composed
from biasaudit.spec.model_configs import ModelPrice, fmt_money
from biasaudit.store import Store, Throughput

if TYPE_CHECKING:
    from collections.abc import Sequence

    from biasaudit.plan.design import Cell
    from biasaudit.runner.pipeline import PlanInputs, Prepared


@dataclass
class JobEstimate:
    label: str
    composed: Composed
    counts: PlanCounts
    model: PlanCount
    shares_with: int | None
    """Index of an earlier job with the same requests (counted once for the sweep)."""
    rate: Throughput | None
    coding: list[LayerEstimate] = field(default_factory=list)
    latest: Throughput | None = None
    """The model's latest measurement of this kind (`rate` pools its last 20)."""
    code_rows: int = 0
    """Code rows a plan item writes: one per primary coding layer (fallback layers code
    only what their primary leaves)."""
    """Coding calls per layer: exact when every subject response is cached, else bounds."""
    coding_exact: bool = False

    @property
    def needed(self) -> int:
        return self.model.unique - self.model.cached

    @property
    def seconds(self) -> float | None:
        return None if self.rate is None else self.needed / self.rate.per_second

    @property
    def price(self) -> ModelPrice | None:
        """The subject model's price as the user stated it (only billed backends have one)."""
        m = self.composed.config.model
        kind = kind_of(m)
        return kind.stated_price(kind.config_of(m)) if kind.billed and kind.stated_price else None

    @property
    def needed_tokens(self) -> tuple[float, float]:
        """(input, output) tokens of the calls still needed: the plan's estimates scaled
        by the share of requests not cached (cached answers are not billed again)."""
        share = self.needed / self.model.unique if self.model.unique else 0.0
        return self.model.input_tokens * share, self.model.output_tokens * share

    @property
    def cost(self) -> float | None:
        """Estimated cost of the calls needed, in the price's currency (None: no price)."""
        return None if self.price is None else self.price.cost(*self.needed_tokens)

    @property
    def wall(self) -> WallTime:
        """Estimated wall time of the run: the calls needed at the model's measured
        throughput (or the backend's default, said so), plus the engine's own work."""
        return wall_time(self.composed.config.model.backend, self.counts.kind, self.needed, self.model.items,
                         [t for t in (self.latest, self.rate) if t is not None])

    @property
    def footprint(self) -> Footprint:
        """Estimated disk (run folder, cache growth) and peak memory of the run."""
        m = self.model
        return footprint_of(items=m.items, unique=m.unique, needed=self.needed, input_tokens=m.input_tokens,
                            output_tokens=m.output_tokens, kind=self.counts.kind, cells=self.counts.cells,
                            code_rows=self.code_rows, metrics=len(self.composed.config.metrics),
                            measured=[t for t in (self.latest, self.rate) if t], coding=self.coding)


def footprint_of(*, items: int, unique: int, needed: int, input_tokens: int, output_tokens: int, kind: str,
                 cells: Sequence[Cell], code_rows: int, metrics: int, measured: list[Throughput],
                 coding: Sequence[LayerEstimate] = ()) -> Footprint:
    """A run's footprint from its counts: a generation's answers as long as the model's
    measured mean (kept with its throughput), else at `max_tokens` (an upper bound)."""
    from biasaudit.plan.footprint import CHARS_PER_TOKEN, SCORE_CHARS_PER_TOKEN

    per = max(unique, 1)
    answer, basis = CHARS_PER_TOKEN * output_tokens / per, "no text answer"
    if kind in ("sequence_logprob", "pseudo_loglik"):  # a score per prompt token is stored
        answer, basis = SCORE_CHARS_PER_TOKEN * input_tokens / per, "a score stored per prompt token"
    elif kind == "generate":
        seen = next((t for t in measured if t.output_tokens), None)
        if seen is not None:
            answer = CHARS_PER_TOKEN * seen.output_tokens / seen.calls
            basis = "answers as long as measured"
        else:
            basis = "answers at max_tokens: an upper bound"
    return estimate_footprint(
        items=items, needed=needed, prompt_tokens=input_tokens / per, answer_chars=answer, cells=len(cells),
        cell_id_chars=sum(len(c.id) for c in cells) / max(len(cells), 1), code_rows_per_item=code_rows,
        metrics=metrics, answer_basis=basis, scored=kind in ("sequence_logprob", "pseudo_loglik"),
        # coding requests are cached too: their bound (or exact count) of calls still needed
        coding_calls=sum(e.needed or 0 for e in coding),
        coding_tokens=sum(e.input_tokens + e.output_tokens for e in coding))


def prepared_footprint(prep: Prepared) -> Footprint:
    """A planned run's footprint (what `run` checks before any model call)."""
    plan, cfg = prep.plan, prep.composed.config
    tin, tout = plan.token_estimate()
    needed, measured = len(plan.requests), []
    if Path(cfg.runtime.cache).is_file():
        import sqlite3

        from biasaudit.errors import StoreError

        store = Store(cfg.runtime.cache, readonly=True)
        try:
            needed -= store.count_ok(list(plan.requests))
            measured = [t for t in (store.throughput(prep.identity, plan.kind, last=1),
                                    store.throughput(prep.identity, plan.kind)) if t]
        except (StoreError, sqlite3.DatabaseError):  # an empty file, a cache without its tables: nothing cached
            pass
        finally:
            store.close()
    return footprint_of(items=plan.n_items, unique=len(plan.requests), needed=needed, input_tokens=tin,
                        output_tokens=tout, kind=plan.kind, cells=plan.cells, code_rows=len(prep.coding.primary),
                        metrics=len(cfg.metrics), measured=measured, coding=bounds(prep.coding, plan.n_items))


def _render_fingerprint(c: Composed) -> str:
    d = c.data
    return canonical_json([str(c.spec_file), {k: d.get(k) for k in ("stimuli", "factors", "design", "probe")},
                           c.config.runtime.seed])


def estimate_jobs(jobs: list[tuple[str, Composed]], lookup_cache: bool = True) -> list[JobEstimate]:
    """Count every job's plan (one rendering pass per distinct payload set); this also
    checks every job's spec, data and templates, so `run -m` uses it before launching."""
    from biasaudit.runner.pipeline import plan_inputs

    inputs = [(label, c, plan_inputs(c)) for label, c in jobs]
    groups: dict[str, list[int]] = {}
    for i, (_, c, _inp) in enumerate(inputs):
        groups.setdefault(_render_fingerprint(c), []).append(i)
    out: dict[int, JobEstimate] = {}
    for members in groups.values():
        first = inputs[members[0]]
        composed, stimuli = first[1], first[2].stimuli
        cfg = composed.config
        idents: dict[str, JSONObject] = {}
        for i in members:
            ident = inputs[i][2].identity
            idents.setdefault(canonical_json(ident), ident)
        cache_file = Path(cfg.runtime.cache).is_file() and lookup_cache
        store = Store(cfg.runtime.cache, readonly=True) if cache_file else None
        try:
            counts = count_plans(cfg, stimuli, list(idents.values()), str(composed.spec_file),
                                 cached=store.count_ok if store else None)
            by_ident = dict(zip(idents, counts.models, strict=True))
            seen: dict[str, int] = {}
            for i in members:
                label, c, inp = inputs[i]
                key = canonical_json(inp.identity)
                rate = _rate(c, inp.identity, counts.kind) if lookup_cache else None
                latest = _rate(c, inp.identity, counts.kind, last=1) if lookup_cache else None
                job = JobEstimate(label=label, composed=c, counts=counts, model=by_ident[key],
                                  shares_with=seen.get(key), rate=rate, latest=latest,
                                  coding=bounds(inp.coding, by_ident[key].items),
                                  code_rows=len(inp.coding.primary))
                if lookup_cache and inp.coding.layers and job.needed == 0 and job.model.unique:
                    job.coding, job.coding_exact = _exact_coding(c, inp), True
                out[i] = job
                seen.setdefault(key, i)
        finally:
            if store is not None:
                store.close()
    return [out[i] for i in range(len(inputs))]


def _exact_coding(c: Composed, inp: PlanInputs) -> list[LayerEstimate]:
    """Every subject response is cached: plan the coding stage against the store."""
    from biasaudit.coding.cost import exact
    from biasaudit.coding.routes import StoreAnswerer
    from biasaudit.coding.units import units_of
    from biasaudit.plan import compile_plan
    from biasaudit.runner.pipeline import Prepared

    plan = compile_plan(c.config, inp.stimuli, inp.identity, str(c.spec_file))
    prep = Prepared(composed=c, stimuli=inp.stimuli, plan=plan, params=inp.params, identity=inp.identity,
                    coding=inp.coding)
    store = Store(c.config.runtime.cache, readonly=True)
    try:
        responses = store.get_many(plan.requests)
    finally:
        store.close()
    return exact(inp.coding, units_of(prep), responses, StoreAnswerer(c.config).lookup)


def _rate(c: Composed, identity: JSONObject, kind: str, last: int = 20) -> Throughput | None:
    path = Path(c.config.runtime.cache)
    if not path.is_file():
        return None
    store = Store(path, readonly=True)
    try:
        return store.throughput(identity, kind, last=last)
    finally:
        store.close()


def fmt_duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def cost_text(job: JobEstimate) -> str:
    """The plan's cost line: the calls needed at the user's price, or plainly none."""
    price, cost = job.price, job.cost
    name = job.composed.config.model.name
    if price is None or cost is None:
        return f"no price given for {name} (set model.price to see the cost: docs/models-and-servers.md)"
    tin, tout = job.needed_tokens
    bound = " (max_tokens: an upper bound)" if job.counts.kind == "generate" else ""
    text = (f"~{fmt_money(cost, price.currency)} for {job.needed} calls needed (~{tin:.0f} input tokens at "
            f"{price.input_per_million:g}/M, {tout:.0f} output tokens{bound} at {price.output_per_million:g}/M)")
    if price.batch_discount is not None:
        text += f"; at the batch price ({price.batch_discount:g} off) ~{fmt_money(cost * (1 - price.batch_discount), price.currency)}"
    return text


# The engine's own work a plan item (planning, storing, coding by rules, measuring,
# reporting) and a run's fixed start (imports, composing, the report), fitted on the
# paper-scale grid with an instant backend (bench/scale_spec.py, model=scripted, 2-core
# machine, 2026-11-29): 13.3 s wall for 2,005 requests, 40.8 s for 20,050.
ENGINE_S_PER_ITEM = 1.52e-3
ENGINE_S_BASE = 10.0

DEFAULT_RATES: dict[str, tuple[float, float]] = {
    # requests/s, (slow, fast), for a model never measured on this cache. Conservative:
    # the slow end is what a small machine or a busy server gives.
    "hf_causal": (0.2, 20.0),      # CPU generation of 200 tokens (slow) to GPU batched scoring (fast)
    "hf_masked": (1.0, 50.0),      # pseudo-log-likelihood: one pass a masked token
    "openai_compat": (0.5, 20.0),  # a hosted or local server at the default concurrency of 4
    "anthropic": (0.5, 10.0),      # the hosted API at its lowest rate-limit tier
    "http_app": (0.5, 20.0),       # a deployed application behind HTTP
    "replay": (1000.0, 20000.0),   # answers read back: the engine's own cost dominates
    "recorded": (1000.0, 20000.0),
    "scripted": (1000.0, 20000.0),
    "oracle": (1000.0, 20000.0),
}
"""Throughput assumed before a model's first run (`biasaudit plan` says "estimate:
default, not measured"); a run records the measured one in the cache."""
_DEFAULT_RATE = (0.2, 20.0)


@dataclass(frozen=True)
class WallTime:
    low_s: float
    high_s: float
    basis: str


def wall_time(backend: str, kind: str, needed: int, items: int, measured: list[Throughput]) -> WallTime:
    """Wall time of a run as a range: the calls needed at the fastest and the slowest of
    the model's measured rates (its latest run, and its last 20 pooled), or at the
    backend's default range when it was never measured, plus the engine's own work."""
    engine = ENGINE_S_BASE + ENGINE_S_PER_ITEM * items
    if needed == 0:
        return WallTime(engine, engine, "all cached: the engine's own work only")
    if measured:
        rates = [t.per_second for t in measured]
        fast, slow = max(rates), min(rates)
        latest = measured[0]
        basis = (f"measured: {latest.per_second:.3g} requests/s in the latest run"
                 + (f", {measured[-1].per_second:.3g} over the last {measured[-1].measurements} runs"
                    if len(measured) > 1 and measured[-1].measurements > 1 else "")
                 + f" ({kind} calls)")
    else:
        slow, fast = DEFAULT_RATES.get(backend, _DEFAULT_RATE)
        basis = f"estimate: default, not measured ({backend}: {slow:g} to {fast:g} requests/s)"
    return WallTime(engine + needed / fast, engine + needed / slow,
                    basis + f"; plus {ENGINE_S_PER_ITEM * 1e3:.1f} ms a plan item for the engine's own work")


def time_text(job: JobEstimate) -> str:
    w = job.wall
    if job.needed == 0:
        return f"~{fmt_duration(w.high_s)} (all cached: the engine's own work)"
    span = (f"~{fmt_duration(w.low_s)}" if fmt_duration(w.low_s) == fmt_duration(w.high_s)
            else f"{fmt_duration(w.low_s)} to {fmt_duration(w.high_s)}")
    return f"{span} ({w.basis})"


def footprint_rows(job: JobEstimate) -> list[tuple[str, str]]:
    """The plan's disk and memory rows."""
    f = job.footprint
    return [
        ("run folder (est.)", f"{fmt_bytes(f.run_folder)} (responses.jsonl {fmt_bytes(f.responses)}, codes.jsonl "
                              f"{fmt_bytes(f.codes)}, item rows at most {fmt_bytes(f.items)}, reports {fmt_bytes(f.report)}; "
                              f"{f.answer_basis})"),
        ("cache growth (est.)", f"{fmt_bytes(f.cache)} in {job.composed.config.runtime.cache}"),
        ("peak memory (est.)", f"{fmt_bytes(f.peak_rss)} (the stages after the model calls hold the run; "
                               "a local model's weights come on top)"),
    ]


def plan_json(job: JobEstimate) -> JSONObject:
    """A single job's plan as JSON (`biasaudit plan --json`)."""
    m, f, w = job.model, job.footprint, job.wall
    price = job.price
    return {
        "spec": str(job.composed.spec_file), "model": job.composed.config.model.name,
        "backend": job.composed.config.model.backend, "probe": job.counts.kind, "cells": len(job.counts.cells),
        "plan_items": m.items, "subject_requests": m.unique, "cached": m.cached, "calls_needed": job.needed,
        "input_tokens": m.input_tokens, "output_tokens_max": m.output_tokens,
        "wall_s": {"low": round(w.low_s, 1), "high": round(w.high_s, 1), "basis": w.basis},
        "cost": None if price is None or job.cost is None else
        {"amount": job.cost, "currency": price.currency, "input_per_million": price.input_per_million,
         "output_per_million": price.output_per_million},
        "disk_bytes": {"run_folder": f.run_folder, "responses_jsonl": f.responses, "codes_jsonl": f.codes,
                       "item_rows_max": f.items, "reports": f.report, "cache_growth": f.cache, "basis": f.answer_basis},
        "peak_memory_bytes": f.peak_rss,
    }
