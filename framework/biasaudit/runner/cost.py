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
from biasaudit.plan.stream import PlanCount, PlanCounts, count_plans
from biasaudit.records.json import JSONObject
from biasaudit.spec.compose import Composed
from biasaudit.spec.model_configs import ModelPrice, fmt_money
from biasaudit.store import Store, Throughput

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import PlanInputs


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
                job = JobEstimate(label=label, composed=c, counts=counts, model=by_ident[key],
                                  shares_with=seen.get(key), rate=rate,
                                  coding=bounds(inp.coding, by_ident[key].items))
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


def _rate(c: Composed, identity: JSONObject, kind: str) -> Throughput | None:
    path = Path(c.config.runtime.cache)
    if not path.is_file():
        return None
    store = Store(path, readonly=True)
    try:
        return store.throughput(identity, kind)
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


def time_text(job: JobEstimate) -> str:
    if job.needed == 0:
        return "0 s (all cached)"
    if job.rate is None:
        return "no measurement yet (run once to measure this model's throughput)"
    r = job.rate
    return (f"~{fmt_duration(job.seconds or 0.0)} at {r.per_second:.1f} requests/s "
            f"(measured over {r.calls} {job.counts.kind} calls in {r.measurements} earlier run(s))")
