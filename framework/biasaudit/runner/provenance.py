"""The records of how a run was made, for its summary: the cover (model, spec, data,
times, version, the auditor's sign-off), how to reproduce it and its audit trail. Built
from the spec, the manifest and the responses, which only the runner holds."""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping

from biasaudit.backends import kind_of, nli_is_subject
from biasaudit.plan import Plan
from biasaudit.plan.items import item_keys
from biasaudit.plan.requests import estimated_tokens
from biasaudit.records.execution import ExecutionStats
from biasaudit.records.json import JSONObject
from biasaudit.records.manifest import RunManifest
from biasaudit.records.responses import Response, ScoredTokens, parse_output, reported_usage
from biasaudit.records.summary import Cover, Reproducibility, TokenCost, Trail
from biasaudit.report.sections import signoff
from biasaudit.spec import AuditConfig
from biasaudit.spec.model_configs import fmt_money


def model_notices(cfg: AuditConfig) -> list[str]:
    """Licence notices of the models this run used (under test, NLI, judges), once each."""
    used = []
    if not nli_is_subject(cfg):
        used.append(cfg.model)
    if cfg.nli is not None:
        used += cfg.nli.models()
    if cfg.judge is not None and cfg.coding:
        used += [j.model for j in cfg.judge.judges if j.model is not None]
    return list(dict.fromkeys(m.notice.strip() for m in used if m.notice))


def scoring_conventions(responses: Mapping[str, Response], kind: str) -> list[str]:
    """How the scored texts' first words were conditioned over HTTP, as the backend
    recorded it per response (in-process scoring always puts the model's BOS first); only
    scored texts (`kind`: the probe's) have a conditioning."""
    if kind not in ("sequence_logprob", "pseudo_loglik"):
        return []
    seen = {out.conditioning for r in responses.values()
            if (out := parse_output(ScoredTokens, r)) is not None and out.conditioning}
    return sorted(seen)


def count_tokens(plan: Plan, responses: Mapping[str, Response], stats: ExecutionStats) -> None:
    """Sum into `stats` the tokens the provider reported for the plan's answers, and the
    plan's estimate for the answers it reported none for (counted apart, never mixed
    into the reported sums). Recomputed from the responses on every render."""
    stats.input_tokens = stats.output_tokens = stats.usage_reported = stats.usage_missing = 0
    stats.estimated_input_tokens = stats.estimated_output_tokens = 0
    stats.batch_input_tokens = stats.batch_output_tokens = 0
    batches: Counter[str] = Counter()
    for key, req in plan.requests.items():
        r = responses.get(key)
        if r is None or not r.ok:
            continue  # a failed request has no answer to count
        usage = reported_usage(r)
        if usage is None:
            tin, tout = estimated_tokens(req)
            stats.usage_missing += 1
            stats.estimated_input_tokens += tin
            stats.estimated_output_tokens += tout
        else:
            tin, tout = usage.input_tokens, usage.output_tokens
            stats.usage_reported += 1
            stats.input_tokens += usage.input_tokens
            stats.output_tokens += usage.output_tokens
        batch = r.field("batch")
        if isinstance(batch, str):  # answered through a provider's batch API (runtime.batch)
            batches[batch] += 1
            stats.batch_input_tokens += tin
            stats.batch_output_tokens += tout
    stats.batch_answers, stats.batch_ids = sum(batches.values()), sorted(batches)


def token_costs(cfg: AuditConfig, stats: ExecutionStats) -> list[TokenCost]:
    """The cover's tokens and cost of the model under test, for models billed by the
    token (behind an API); none for a model run on this machine."""
    m = cfg.model
    answers = stats.usage_reported + stats.usage_missing
    kind = kind_of(m)
    if not kind.billed or answers == 0:
        return []
    tin = stats.input_tokens + stats.estimated_input_tokens
    tout = stats.output_tokens + stats.estimated_output_tokens
    est = stats.usage_missing
    text = f"{m.name}: {tin:,} input and {tout:,} output tokens"
    if est:
        text += (f" (estimated: the provider reported no usage for {est} of {answers} answers, counted at the "
                 "plan's estimate: characters / 4 in, max_tokens out)")
    else:
        text += f" as the provider reported them for all {answers} answers"
    nb = stats.batch_answers
    if nb:
        shown = ", ".join(stats.batch_ids[:4]) + (f" and {len(stats.batch_ids) - 4} more" if len(stats.batch_ids) > 4 else "")
        text += f"; {nb} of {answers} answers through the provider's batch API (batch{'es' if len(stats.batch_ids) > 1 else ''} {shown})"
    price = kind.stated_price(kind.config_of(m)) if kind.stated_price else None
    cost = None if price is None else price.cost(tin, tout)
    if price is None or cost is None:
        text += f"; no price given for {m.name} (model.price)"
    else:
        at = f"{price.input_per_million:g} in / {price.output_per_million:g} out per million tokens"
        if nb and price.batch_discount is not None:
            # the batch answers' tokens at the batch price: the discount taken off their share
            cost -= price.batch_discount * price.cost(stats.batch_input_tokens, stats.batch_output_tokens)
            at += f", the {nb} batch answers {price.batch_discount:g} off"
        elif nb:
            at += " (the batch answers at the full price: no model.price.batch_discount given)"
        text += f"; {'estimated ' if est else ''}cost {fmt_money(cost, price.currency)} at {at}"
    return [TokenCost(model=m.name, input_tokens=tin, output_tokens=tout, estimated_answers=est, answers=answers,
                      cost=cost, currency=None if price is None else price.currency, batch_answers=nb,
                      batch_ids=list(stats.batch_ids), text=text)]


def cover(cfg: AuditConfig, manifest: RunManifest, generated: str, responses: Mapping[str, Response],
          tokens: list[TokenCost] | None = None) -> Cover:
    ident: JSONObject = manifest.model.identity
    return Cover(
        notices=model_notices(cfg),
        title=cfg.report.title or cfg.audit.name,
        audit=cfg.audit.name,
        method=cfg.audit.method,
        description=cfg.audit.description,
        model=manifest.model.name,
        backend=manifest.model.backend,
        # a managed engine serving the model (model.serve): which, and which weights
        served_by=f"{ident['engine']} ({ident.get('serve_weights', '')} weights)" if ident.get("engine") else "",
        model_file=ident.get("gguf_file") or ident.get("path") or ident.get("model") or "",
        model_sha256=ident.get("sha256") or ident.get("file_sha256") or "",
        model_revision=ident.get("revision") or "",
        spec_file=manifest.spec_file,
        spec_sha256=manifest.spec_sha256,
        data_source=manifest.data.source or "inline",
        data_sha256=manifest.data.sha256 or "",
        started=manifest.started or "",
        finished=manifest.finished or "",
        generated=generated,
        tool_version=manifest.versions.get("biasaudit", ""),
        run_id=manifest.run_id,
        **signoff(cfg.audit),
        scoring=scoring_conventions(responses, cfg.probe.kind),
        tokens=tokens or [],
    )


def reproducibility(manifest: RunManifest) -> Reproducibility:
    return Reproducibility(
        command=shlex.join(manifest.command),
        overrides=manifest.overrides,
        choices=manifest.choices,
        seed=manifest.seed,
        cache=manifest.cache,
        versions=manifest.versions,
        rerun=shlex.join(["biasaudit", "run", *manifest.overrides]),
    )


def trail(plan: Plan, responses: Mapping[str, Response], codes: bool = False) -> Trail:
    status = Counter(responses[k].status for k in item_keys(plan.items))  # the key column: no item built
    return Trail(file="responses.jsonl", lines=len(plan.items), requests=len(plan.requests),
                 ok=status.get("ok", 0), failed=sum(v for k, v in status.items() if k != "ok"),
                 codes="codes.jsonl" if codes else None)


__all__ = ["count_tokens", "cover", "model_notices", "reproducibility", "scoring_conventions", "token_costs", "trail"]
