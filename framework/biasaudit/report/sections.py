"""The shared report layout, as data: cover, executive summary, method, conditions,
reliability, data quality, reproducibility and audit trail. Every template reads only
these dicts, so summary.json holds every number a report shows."""

from __future__ import annotations

import shlex
from collections import Counter
from typing import Any

from biasaudit.methods.base import method_text
from biasaudit.records.estimate import Estimate
from biasaudit.records.manifest import RunManifest
from biasaudit.report.crosswalk import clause_for
from biasaudit.stats import wilson

OVER_TEXT = {
    "pooled": "pooled over all cells",
    "worst_cell": "worst cell (every prompt condition must pass)",
    "spread": "spread across prompt conditions (max - min of the cell values)",
}


def _est(e: Estimate | dict[str, Any]) -> dict[str, Any]:
    return e.model_dump(mode="json") if isinstance(e, Estimate) else e


def model_notices(cfg: Any) -> list[str]:
    """Licence notices of the models this run used (under test, NLI, judges), once each."""
    used = []
    if not (cfg.probe.kind == "classify_nli" and cfg.nli is not None and cfg.nli.backend == "hf_nli"):
        used.append(cfg.model)
    if cfg.nli is not None and cfg.nli.model is not None:
        used.append(cfg.nli.model)
    if cfg.judge is not None and cfg.coding:
        used += [j.model for j in cfg.judge.judges if j.model is not None]
    return list(dict.fromkeys(m.notice.strip() for m in used if m.notice))


def cover(cfg: Any, manifest: RunManifest, generated: str) -> dict[str, Any]:
    ident = manifest.model.identity
    return {
        "notices": model_notices(cfg),
        "title": cfg.report.title or cfg.audit.name,
        "audit": cfg.audit.name,
        "method": cfg.audit.method,
        "description": cfg.audit.description,
        "model": manifest.model.name,
        "backend": manifest.model.backend,
        # a managed engine serving the model (model.serve): which, and which weights
        "served_by": f"{ident['engine']} ({ident.get('serve_weights', '')} weights)" if ident.get("engine") else "",
        "model_file": ident.get("gguf_file") or ident.get("path") or ident.get("model") or "",
        "model_sha256": ident.get("sha256") or ident.get("file_sha256") or "",
        "model_revision": ident.get("revision") or "",
        "spec_file": manifest.spec_file,
        "spec_sha256": manifest.spec_sha256,
        "data_source": manifest.data.source or "inline",
        "data_sha256": manifest.data.sha256 or "",
        "started": manifest.started or "",
        "finished": manifest.finished or "",
        "generated": generated,
        "tool_version": manifest.versions.get("biasaudit", ""),
        "run_id": manifest.run_id,
        **signoff(cfg.audit),
    }


def signoff(audit: Any) -> dict[str, Any]:
    """The scope, limitations and sign-off the auditor wrote (`audit.scope`, ...), as
    given: the templates escape them and print "not stated" for an empty one."""
    return {"scope": getattr(audit, "scope", "") or "", "limitations": getattr(audit, "limitations", "") or "",
            "auditor": getattr(audit, "auditor", "") or "", "signoff_date": getattr(audit, "date", None) or ""}


def verdict_rows(verdicts: list[dict[str, Any]], crosswalk: str | None) -> list[dict[str, Any]]:
    out = []
    for v in verdicts:
        out.append({**v, "over_text": OVER_TEXT.get(v["over"], v["over"]),
                    "clauses": [clause_for(r, crosswalk) for r in v["refs"]]})
    return out


def executive(results: dict[str, Any], verdicts: list[dict[str, Any]], overall: str, model: str = "",
              unmeasured: str | None = None) -> dict[str, Any]:
    """`unmeasured`: why the run could not measure (too many failed requests), said first."""
    counts = Counter(v["verdict"] for v in verdicts)
    heads = []
    for mid, r in results.items():
        e = r.estimates[r.headline]
        heads.append({"metric": mid, "title": r.title, "estimate_name": r.headline, "estimate": _est(e),
                      "reference": r.reference})
    n = len(verdicts)
    if n:
        text = (f"{n} threshold(s) checked: {counts.get('PASS', 0)} PASS, {counts.get('FAIL', 0)} FAIL, "
                f"{counts.get('INCONCLUSIVE', 0)} INCONCLUSIVE.")
    else:
        text = "The spec states no thresholds; the estimates below are reported without a verdict."
    if unmeasured:
        text = f"The run could not measure: {unmeasured}. " + text
    return {"overall": overall, "n_thresholds": n, "pass": counts.get("PASS", 0), "fail": counts.get("FAIL", 0),
            "inconclusive": counts.get("INCONCLUSIVE", 0), "text": text, "headlines": heads,
            "sanity": [sanity_statement(v, model) for v in verdicts if v.get("sanity")]}


SANITY_TEXT = {
    "PASS": "The sanity check passed for this model: it behaves as the method assumes on a task whose answer "
            "is known.",
    "FAIL": "The sanity check failed for this model: on a task whose answer is known it does not behave as the "
            "method assumes, so this is a finding about the model, not evidence against the method; the "
            "method's estimates on this model should not be read as bias findings.",
    "INCONCLUSIVE": "The sanity check is inconclusive for this model: its interval straddles the bound "
                    "(more stimuli would decide).",
}


def sanity_statement(v: dict[str, Any], model: str) -> dict[str, Any]:
    """One sentence per sanity threshold, with the model named and the spec's own note."""
    return {"verdict": v["verdict"], "metric": v["metric"], "model": model,
            "text": f"{model}: {SANITY_TEXT[v['verdict']]}", "note": v.get("note", "")}


def method(cfg: Any, plan: Any, stimuli: Any) -> dict[str, Any]:
    by_name: dict[str, dict[str, Any]] = {}
    for m in cfg.metrics:
        text = method_text(m.name)
        entry = by_name.setdefault(m.name, {"metric_keys": [], "name": text.name, "source": text.source,
                                            "computes": text.computes, "reading": text.reading})
        entry["metric_keys"].append(m.key)
    metrics = list(by_name.values())
    factors = {f: list(levels) for f, levels in cfg.factors.items()}
    return {
        "metrics": metrics,
        "probe": plan.kind,
        "design": cfg.design.kind,
        "factors": factors,
        "n_cells": len(plan.cells),
        "stimuli": len(stimuli.stimuli),
        "stimuli_total": stimuli.n_total,
    }


def conditions(cfg: Any, plan: Any, results: dict[str, Any]) -> dict[str, Any]:
    """Per metric estimate with per-cell values: each cell, and the spread (range with
    its interval, eta^2). Empty when the design has a single cell."""
    levels = {c.id: c.levels for c in plan.cells}
    out = []
    for mid, r in results.items():
        for name, by_cell in r.cells.items():
            if len(by_cell) < 2:
                continue
            sp = r.spread.get(name)
            # the distribution: cells sorted by value (cells without data last), each with its interval
            order = sorted(by_cell, key=lambda c: (by_cell[c].value is None, by_cell[c].value or 0.0))
            cells = [{"cell": c, "levels": levels.get(c, {}), "estimate": _est(by_cell[c])} for c in order]
            out.append({
                "metric": mid, "estimate": name,
                "cells": cells,
                "plot": {"kind": "interval_bars", "title": f"{mid}.{name} per prompt condition (sorted, 95% intervals)",
                         "xlabel": "prompt condition", "ylabel": name, "labels": order,
                         "estimates": [x["estimate"] for x in cells], "reference": r.reference,
                         "alt": f"{mid}.{name} in each of the {len(order)} prompt conditions, sorted by value, "
                                "with 95% intervals" + (f"; the line marks {r.reference:g}" if r.reference is not None
                                                         else "") + "."},
                "range": _est(sp.range) if sp else None,
                "eta2": sp.eta2 if sp else None,
                "min_cell": sp.min_cell if sp else None,
                "max_cell": sp.max_cell if sp else None,
            })
    return {"has_factors": bool(cfg.factors), "factors": {f: list(v) for f, v in cfg.factors.items()},
            "spreads": out}


def reliability(results: dict[str, Any], execution: dict[str, Any], coding: Any = None) -> list[dict[str, Any]]:
    """Every reliability number in one table: failed requests, each metric's own items,
    and the coding stage's (layer pairs, judge panels, choice position effects)."""
    rows = []
    total = int(execution.get("requests", 0))
    fails = int(execution.get("failures", 0))
    rows.append({"metric": "execution", "name": "failed model requests",
                 "estimate": _est(wilson(fails, total)),
                 "note": "recorded in the store and left out of the metrics; `--retry-failed` sends them again"})
    for mid, r in results.items():
        for item in r.reliability:
            rows.append({"metric": mid, "name": item.name, "estimate": _est(item.estimate), "note": item.note})
    if coding is not None:
        for p in coding.pairs:
            src = f"coding: {p.a} vs {p.b}"
            rows.append({"metric": src, "name": "percent agreement", "estimate": _est(p.pooled.percent),
                         "note": f"units both layers coded, over labels {', '.join(p.labels)}"})
            rows.append({"metric": src, "name": "Cohen's kappa", "estimate": _est(p.pooled.kappa),
                         "note": "agreement beyond chance; interval resamples stimuli"})
            rows.append({"metric": src, "name": "Krippendorff's alpha", "estimate": _est(p.pooled.alpha),
                         "note": "nominal; interval resamples stimuli"})
            if p.pooled.ir is not None and p.pooled.dni is not None:
                rows.append({"metric": src, "name": "IR (endorsement disagrees)", "estimate": _est(p.pooled.ir),
                             "note": "share of units endorsing on exactly one layer"})
                rows.append({"metric": src, "name": f"DNI ({p.a} - {p.b})", "estimate": _est(p.pooled.dni),
                             "note": "direction of the disagreement"})
        rows.extend(_gold_rows(coding))
        for pan in coding.panels:
            rows.append({"metric": f"coding: {pan.layer}", "name": "inter-judge Krippendorff's alpha",
                         "estimate": _est(pan.alpha), "note": f"judges {', '.join(pan.judges)}"})
        for pos in coding.positions:
            if pos.flips is not None:
                rows.append({"metric": f"coding: {pos.layer}", "name": "position effect", "estimate": _est(pos.flips),
                             "note": "answers that change when the options are listed in reverse"})
            if pos.first is not None and pos.expected_first is not None:
                rows.append({"metric": f"coding: {pos.layer}", "name": "first-option rate", "estimate": _est(pos.first),
                             "note": f"answers picking the first-listed option (no position effect: "
                                     f"{pos.expected_first:.3f})"})
    return rows


def _gold_rows(coding: Any) -> list[dict[str, Any]]:
    """Pairs with a human layer: each rater's accuracy and kappa against the human labels,
    and each label's prediction-powered rate (coding/human_review.py)."""
    rows = []
    for g in getattr(coding, "gold", []):
        src = f"human review: {g.layer} vs {g.human}"
        for r in g.raters:
            rows.append({"metric": src, "name": f"accuracy of {r.rater}", "estimate": _est(r.accuracy),
                         "note": f"against {r.n} human labels (chance {r.chance:.3f})" if r.chance is not None
                         else "no unit labelled by both"})
            rows.append({"metric": src, "name": f"Cohen's kappa of {r.rater}", "estimate": _est(r.kappa),
                         "note": "against the human labels; interval resamples stimuli"})
        for rate in g.rates:
            rows.append({"metric": src, "name": f"rate of {rate.label} (PPI)", "estimate": _est(rate.ppi),
                         "note": f"judge-only {rate.judge.fmt()}; " + (rate.ppi.note or "")})
    return rows


def quality(manifest: RunManifest, results: dict[str, Any], execution: dict[str, Any]) -> dict[str, Any]:
    d = manifest.data
    return {
        "data_rows": d.rows, "data_used": d.used, "data_left_out": d.rows - d.used,
        "metric_counts": {mid: dict(r.counts) for mid, r in results.items()},
    }


def reproducibility(manifest: RunManifest) -> dict[str, Any]:
    return {
        "command": shlex.join(manifest.command),
        "overrides": manifest.overrides,
        "choices": manifest.choices,
        "seed": manifest.seed,
        "cache": manifest.cache,
        "versions": manifest.versions,
        "rerun": shlex.join(["biasaudit", "run", *manifest.overrides]),
    }


def trail(plan: Any, responses: dict[str, Any], codes: bool = False) -> dict[str, Any]:
    status = Counter(responses[it.key].status for it in plan.items)
    return {"file": "responses.jsonl", "lines": len(plan.items), "requests": len(plan.requests),
            "ok": status.get("ok", 0), "failed": sum(v for k, v in status.items() if k != "ok"),
            "codes": "codes.jsonl" if codes else None}
