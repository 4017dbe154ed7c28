"""The report's views of a run, built at render time from the typed `RunSummary`:
executive summary, method, prompt conditions, the reliability table, data quality, the
validity flags and the verdict rows with their clause texts.

`document` lays them out beside the summary's own records, in the layout summary.json has
always had; every template reads only that document, so summary.json holds every number
a report shows. The summary's records are data; these views are presentation (wording,
ordering, plot data) and are not read back.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from biasaudit.methods.base import method_text
from biasaudit.records.estimate import Estimate
from biasaudit.records.manifest import DataProvenance
from biasaudit.records.summary import DataInfo, RunSummary
from biasaudit.records.verdict import VerdictRecord
from biasaudit.report.crosswalk import clause_for
from biasaudit.stats import wilson

OVER_TEXT = {
    "pooled": "pooled over all cells",
    "worst_cell": "worst cell (every prompt condition must pass)",
    "spread": "spread across prompt conditions (max - min of the cell values)",
}


def _est(e: Estimate) -> dict[str, Any]:
    return e.model_dump(mode="json")


def signoff(audit: Any) -> dict[str, Any]:
    """The scope, limitations and sign-off the auditor wrote (`audit.scope`, ...), as
    given: the templates escape them and print "not stated" for an empty one."""
    return {"scope": getattr(audit, "scope", "") or "", "limitations": getattr(audit, "limitations", "") or "",
            "auditor": getattr(audit, "auditor", "") or "", "signoff_date": getattr(audit, "date", None) or ""}


def verdict_rows(verdicts: list[VerdictRecord], crosswalk: str | None) -> list[dict[str, Any]]:
    return [{**v.model_dump(mode="json"), "over_text": OVER_TEXT.get(v.over, v.over),
             "clauses": [clause_for(r, crosswalk) for r in v.refs]} for v in verdicts]


def executive(s: RunSummary) -> dict[str, Any]:
    """The headline of every metric and the verdict counts; a run that could not measure
    (too many failed requests) says so first."""
    counts = Counter(v.verdict for v in s.verdicts)
    heads = [{"metric": mid, "title": r.title, "estimate_name": r.headline, "estimate": _est(r.estimates[r.headline]),
              "reference": r.reference} for mid, r in s.metrics.items()]
    n = len(s.verdicts)
    if n:
        text = (f"{n} threshold(s) checked: {counts.get('PASS', 0)} PASS, {counts.get('FAIL', 0)} FAIL, "
                f"{counts.get('INCONCLUSIVE', 0)} INCONCLUSIVE.")
    else:
        text = "The spec states no thresholds; the estimates below are reported without a verdict."
    if s.unmeasured_reason:
        text = f"The run could not measure: {s.unmeasured_reason}. " + text
    return {"overall": s.overall, "n_thresholds": n, "pass": counts.get("PASS", 0), "fail": counts.get("FAIL", 0),
            "inconclusive": counts.get("INCONCLUSIVE", 0), "text": text, "headlines": heads,
            "sanity": [sanity_statement(v, s.model.name) for v in s.verdicts if v.sanity]}


SANITY_TEXT = {
    "PASS": "The sanity check passed for this model: it behaves as the method assumes on a task whose answer "
            "is known.",
    "FAIL": "The sanity check failed for this model: on a task whose answer is known it does not behave as the "
            "method assumes, so this is a finding about the model, not evidence against the method; the "
            "method's estimates on this model should not be read as bias findings.",
    "INCONCLUSIVE": "The sanity check is inconclusive for this model: its interval straddles the bound "
                    "(more stimuli would decide).",
}


def sanity_statement(v: VerdictRecord, model: str) -> dict[str, Any]:
    """One sentence per sanity threshold, with the model named and the spec's own note."""
    return {"verdict": v.verdict, "metric": v.metric, "model": model,
            "text": f"{model}: {SANITY_TEXT[v.verdict]}", "note": v.note}


def method(s: RunSummary) -> dict[str, Any]:
    """Each method's report text (once per method, with the metric ids it computed) and the design."""
    by_name: dict[str, dict[str, Any]] = {}
    for key, r in s.metrics.items():
        name = s.design.metric_names.get(key, r.name)
        text = method_text(name)
        entry = by_name.setdefault(name, {"metric_keys": [], "name": text.name, "source": text.source,
                                          "computes": text.computes, "reading": text.reading})
        entry["metric_keys"].append(key)
    return {
        "metrics": list(by_name.values()),
        "probe": s.design.probe,
        "design": s.design.kind,
        "factors": {f: list(levels) for f, levels in s.design.factors.items()},
        "groups": {f: dict(g) for f, g in s.design.groups.items()},
        "n_cells": s.design.n_cells,
        "stimuli": s.data.used,
        "stimuli_total": s.data.rows,
        "sample": sample_text(s.data),
        "data_citation": data_citation(s.data.provenance) if s.data.provenance else None,
    }


def data_citation(p: DataProvenance) -> str:
    """The published data a run used, as the report cites it: "CrowS-Pairs,
    nyu-mll/crows-pairs@dfb3698 data/crows_pairs_anonymized.csv, CC BY-SA 4.0, sha256 ..."."""
    where = f"{p.source_repo}@{p.commit[:7]} {p.source_path}".strip()
    checked = {"sha256": "", "git_blob_sha1": " (checked against the source tree's git blob id)",
               "none": " (its provenance records no digest to check)"}.get(p.checked, "")
    return f"{p.title or p.benchmark}, {where}, {p.licence}, sha256 {p.sha256}{checked}"


def sample_text(d: DataInfo) -> str | None:
    """`stimuli.sample` in words: "300 of 1508 stimuli, seed 0" (the 1508 counted after
    `where`), or why every stimulus was used; None without a sample."""
    sm = d.sample
    if sm is None:
        return None
    after = f" (after `where`; {d.rows} in the data)" if sm.of != d.rows else ""
    if sm.drawn:
        return f"{sm.n} of {sm.of} stimuli{after}, seed {sm.seed}"
    return f"all {sm.of} stimuli{after}: the sample of {sm.n} asked for is not smaller"


def conditions(s: RunSummary) -> dict[str, Any]:
    """Per metric estimate with per-cell values: each cell, and the spread (range with
    its interval, eta^2). Empty when the design has a single cell."""
    out = []
    for mid, r in s.metrics.items():
        for name, by_cell in r.cells.items():
            if len(by_cell) < 2:
                continue
            sp = r.spread.get(name)
            # the distribution: cells sorted by value (cells without data last), each with its interval
            order = sorted(by_cell, key=lambda c: (by_cell[c].value is None, by_cell[c].value or 0.0))
            cells = [{"cell": c, "levels": s.design.levels.get(c, {}), "estimate": _est(by_cell[c])} for c in order]
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
    factors = {f: list(v) for f, v in s.design.factors.items()}
    return {"has_factors": bool(factors), "factors": factors, "spreads": out}


def reliability(s: RunSummary) -> list[dict[str, Any]]:
    """Every reliability number in one table: failed requests, each metric's own items,
    and the coding stage's (layer pairs, judge panels, choice position effects)."""
    rows = [{"metric": "execution", "name": "failed model requests",
             "estimate": _est(wilson(s.execution.failures, s.execution.requests)),
             "note": "recorded in the store and left out of the metrics; `--retry-failed` sends them again"}]
    for mid, r in s.metrics.items():
        for item in r.reliability:
            rows.append({"metric": mid, "name": item.name, "estimate": _est(item.estimate), "note": item.note})
    coding = s.coding
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


def quality(s: RunSummary) -> dict[str, Any]:
    d = s.data
    return {"data_rows": d.rows, "data_used": d.used, "data_left_out": d.rows - d.used,
            "metric_counts": {mid: dict(r.counts) for mid, r in s.metrics.items()}}


def validity(s: RunSummary) -> list[dict[str, Any]]:
    """Every validity flag of the run's metrics, with the metric it is on (the report's
    "Can these numbers decide?")."""
    return [{"metric": k, **f.model_dump(mode="json")} for k, r in s.metrics.items() for f in r.validity]


def document(s: RunSummary, crosswalk: str | None) -> dict[str, Any]:
    """summary.json: the summary's records with the report's views between them, in the
    order the file has always had (keys a summary from another version carried are kept)."""
    data = s.model_dump(mode="json")
    views = {"executive": executive(s), "method": method(s), "conditions": conditions(s),
             "reliability": reliability(s), "quality": quality(s), "verdicts": verdict_rows(s.verdicts, crosswalk),
             "validity": validity(s)}
    # format_version first: a reader learns the layout before anything else
    order = ["format_version", "audit", "run_id", "model", "spec_sha256", "data", "generated", "cover", "executive",
             "method", "design", "execution", "metrics", "coding", "conditions", "reliability", "quality", "verdicts",
             "validity", "overall", "measured", "unmeasured_reason", "reproducibility", "trail", "answers"]
    doc = {k: views[k] if k in views else data[k] for k in order}
    doc.update({k: v for k, v in data.items() if k not in doc})
    return doc


__all__ = ["OVER_TEXT", "SANITY_TEXT", "conditions", "data_citation", "document", "executive", "method", "quality",
           "reliability", "sample_text", "sanity_statement", "signoff", "validity", "verdict_rows"]
