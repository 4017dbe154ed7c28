"""The records of how a run was made, for its summary: the cover (model, spec, data,
times, version, the auditor's sign-off), how to reproduce it and its audit trail. Built
from the spec, the manifest and the responses, which only the runner holds."""

from __future__ import annotations

import shlex
from collections import Counter

from biasaudit.plan import Plan
from biasaudit.records.json import JSONObject
from biasaudit.records.manifest import RunManifest
from biasaudit.records.responses import Response, ScoredTokens, parse_output
from biasaudit.records.summary import Cover, Reproducibility, Trail
from biasaudit.report.sections import signoff
from biasaudit.spec import AuditConfig


def model_notices(cfg: AuditConfig) -> list[str]:
    """Licence notices of the models this run used (under test, NLI, judges), once each."""
    used = []
    if not (cfg.probe.kind == "classify_nli" and cfg.nli is not None and cfg.nli.backend == "hf_nli"):
        used.append(cfg.model)
    if cfg.nli is not None and cfg.nli.model is not None:
        used.append(cfg.nli.model)
    if cfg.judge is not None and cfg.coding:
        used += [j.model for j in cfg.judge.judges if j.model is not None]
    return list(dict.fromkeys(m.notice.strip() for m in used if m.notice))


def scoring_conventions(responses: dict[str, Response], kind: str) -> list[str]:
    """How the scored texts' first words were conditioned over HTTP, as the backend
    recorded it per response (in-process scoring always puts the model's BOS first); only
    scored texts (`kind`: the probe's) have a conditioning."""
    if kind not in ("sequence_logprob", "pseudo_loglik"):
        return []
    seen = {out.conditioning for r in responses.values()
            if (out := parse_output(ScoredTokens, r)) is not None and out.conditioning}
    return sorted(seen)


def cover(cfg: AuditConfig, manifest: RunManifest, generated: str, responses: dict[str, Response]) -> Cover:
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


def trail(plan: Plan, responses: dict[str, Response], codes: bool = False) -> Trail:
    status = Counter(responses[it.key].status for it in plan.items)
    return Trail(file="responses.jsonl", lines=len(plan.items), requests=len(plan.requests),
                 ok=status.get("ok", 0), failed=sum(v for k, v in status.items() if k != "ok"),
                 codes="codes.jsonl" if codes else None)


__all__ = ["cover", "model_notices", "reproducibility", "scoring_conventions", "trail"]
