"""The run's side of `runtime.budget` (the spend itself is kept by engine/budget.py):
refusing a budget that cannot be kept before any call, and, when the budget stopped the
run, restricting it to the stimuli answered in full, as a sequential stop does
(runner/sequential.py: `restrict`, and its run-level counts), with every verdict
INCONCLUSIVE: the stimuli not run were not chosen by the design, so the sample measured
is not the one planned."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from biasaudit.backends import kind_of
from biasaudit.engine.budget import Budget
from biasaudit.errors import BackendError, SpecError
from biasaudit.plan import Plan
from biasaudit.records.budget import BudgetRecord
from biasaudit.records.execution import ExecutionStats
from biasaudit.records.responses import Response
from biasaudit.records.verdict import VerdictRecord
from biasaudit.registry import BACKENDS
from biasaudit.spec import AuditConfig, ModelConfig
from biasaudit.spec.model_configs import ModelPrice

if TYPE_CHECKING:
    from biasaudit.coding.layers import CodingPlan
    from biasaudit.runner.pipeline import Prepared

log = logging.getLogger(__name__)


def model_price(cfg: AuditConfig) -> ModelPrice | None:
    """The price stated for the model under test (only billed models, and the test double
    standing in for one, have one)."""
    kind = kind_of(cfg.model)
    return kind.stated_price(kind.config_of(cfg.model)) if kind.stated_price else None


def coder_models(cfg: AuditConfig, coding: CodingPlan | None) -> list[tuple[str, ModelConfig]]:
    """The chat models the coding layers call ("judge j1", its model config), each once; a
    judge or NLI chat model with no model of its own is the model under test."""
    from biasaudit.coding.routes import route_model

    if coding is None:
        return []
    seen: dict[str, ModelConfig] = {}
    for lay in coding.layers.values():
        for route, _kind in lay.coder_def.routes(lay.env, lay.options):
            if route == "subject" or route == "nli_chat" or route.startswith("judge:"):
                who = {"subject": "the model under test as coder", "nli_chat": "the NLI chat model"}.get(
                    route, f"judge {route.partition(':')[2]}")
                seen.setdefault(who, route_model(cfg, route))
    return list(seen.items())


def check_budget(cfg: AuditConfig, spec_file: str, model_choice: str | None = None,
                 coding: CodingPlan | None = None) -> None:
    """Refuse, before any call, a budget that cannot be kept (a missing price is named in
    the model config it belongs in, `conf/model/<model_choice>.yaml`; a judge with a price
    of its own, whose calls a budget does not count yet)."""
    b = cfg.runtime.budget
    if not b.active:
        return
    if b.money is not None and model_price(cfg) is None:
        where = f"conf/model/{model_choice}.yaml" if model_choice else spec_file
        raise SpecError(f"a money budget needs the price of {cfg.model.name} (model.price)", file=where,
                        key="runtime.budget.money",
                        hint="state the price (+model.price.input_per_million=... +model.price.output_per_million=...) "
                             "or give a token budget (runtime.budget.tokens=...)")
    coders = coder_models(cfg, coding)
    priced = [f"{who} ({m.name})" for who, m in coders
              if m is not cfg.model and getattr(m, "price", None) is not None]
    if b.money is not None and priced:
        raise SpecError(f"judges' calls are not counted by a budget yet, and {priced[0]} has a price: a money "
                        "budget would not see its spend", file=spec_file, key="runtime.budget.money",
                        hint="use judges without a price (local models, or the model under test) or run without "
                             "runtime.budget.money")
    if [who for who, m in coders if m is cfg.model]:
        log.warning("budget: the coding calls the model under test answers (%s) are not counted by "
                    "runtime.budget, only the probe's calls are",
                    ", ".join(who for who, m in coders if m is cfg.model)[:200])
    if cfg.runtime.sequential.look_every is not None:
        raise SpecError("a budget cannot be combined with sequential stopping yet", file=spec_file,
                        key="runtime.budget",
                        hint="run without runtime.sequential.look_every, or without runtime.budget")


def make_budget(cfg: AuditConfig) -> Budget | None:
    """The run's budget (None: no limit), its window the requests the engine may have in
    flight: the model's concurrency over HTTP, a local model's batch."""
    b = cfg.runtime.budget
    if not b.active:
        return None
    m = cfg.model
    local = BACKENDS.get(m.backend).local
    window = cfg.runtime.batch_size if local else int(getattr(m, "concurrency", 1) or 1)
    return Budget(b, model_price(cfg), window)


def budget_plan(prep: Prepared) -> Plan:
    """The plan with its requests in the order a budgeted run sends them: stimulus by
    stimulus, in the seeded order sequential stopping takes them (`stimulus_order`), so a
    stop leaves whole stimuli answered (a plan's own order goes cell by cell, and a stop
    part-way would leave every stimulus incomplete), and those a random sample of all."""
    from biasaudit.runner.sequential import stimulus_order

    rank = {sid: i for i, sid in enumerate(stimulus_order(prep))}
    items = sorted(prep.plan.items, key=lambda it: rank.get(it.stimulus, len(rank)))
    keys = dict.fromkeys(it.key for it in items)
    return dataclasses.replace(prep.plan, requests={k: prep.plan.requests[k] for k in keys})


def complete_stimuli(prep: Prepared, responses: Mapping[str, Response]) -> set[str]:
    """The stimuli every request of which has an answer (or a stored failure)."""
    missing = {it.stimulus for it in prep.plan.items if it.key not in responses}
    return {s.id for s in prep.stimuli.stimuli} - missing


def stopped_run(prep: Prepared, responses: Mapping[str, Response], stats: ExecutionStats,
                budget: Budget) -> tuple[Prepared, dict[str, Response], ExecutionStats, BudgetRecord]:
    """A run the budget stopped, restricted to the stimuli answered in full."""
    from biasaudit.runner.sequential import final_stats, restrict

    keep = complete_stimuli(prep, responses)
    ids = [s.id for s in prep.stimuli.stimuli]
    record = budget.record(planned=len(ids), run=len(keep), not_run_ids=[i for i in ids if i not in keep])
    if not keep:
        raise BackendError(f"{record.text}: no stimulus was answered in full, so there is nothing to measure",
                          key=record.limit, hint=f"resume with a higher {record.limit} (the answers so far are kept)")
    sub = restrict(prep, keep)
    kept = {k: responses[k] for k in sub.plan.requests}
    return sub, kept, final_stats(sub, kept, stats, ExecutionStats()), record


def budget_verdicts(verdicts: list[VerdictRecord], record: BudgetRecord) -> list[VerdictRecord]:
    """Every verdict INCONCLUSIVE when the budget stopped the run (what the interval alone
    said is kept in `would_be`)."""
    if not record.stopped:
        return verdicts
    why = (f"the run stopped at its budget ({record.limit}): {record.run} of {record.planned} stimuli run; "
           "resume with a higher budget to decide")
    return [v.model_copy(update={"verdict": "INCONCLUSIVE", "reason": why, "blocked": True,
                                 "would_be": v.would_be or v.verdict}) for v in verdicts]


__all__ = ["budget_plan", "budget_verdicts", "check_budget", "complete_stimuli", "make_budget", "model_price",
           "coder_models", "stopped_run"]
