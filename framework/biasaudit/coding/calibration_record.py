"""What a coder's calibration says, kept with the cache, and read by a run.

`biasaudit calibrate` codes a layer's labelled control set and scores each rater against
the gold labels: accuracy (Wilson interval) beside the chance level, Cohen's kappa
with a bootstrap interval (control rows resampled) and the confusion matrix. A rater is *better than chance* when
kappa's lower bound is above 0: its agreement with the gold labels is more than its
label marginals alone would give. The result is stored in the cache under the coder's
identity (its coder, options, labels and the identities of the models it asks), so an
edit of the rubric or a different judge model is a coder that has not been calibrated.

A run reads the newest stored result of every model-backed layer: a layer whose coder
failed it, or (with `require_calibration: true`) has none, makes the verdicts it feeds
INCONCLUSIVE (metrics/validity.py).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from biasaudit.coding.layers import CodingPlan, Layer
from biasaudit.spec import AuditConfig
from biasaudit.stats import cohen_kappa, wilson

KAPPA_RESAMPLES = 2000


def coder_key(cfg: AuditConfig, lay: Layer) -> str:
    """The identity of a layer's coder: what it is asked and who answers."""
    from biasaudit.coding.routes import route_identity

    opts = lay.options.model_dump(mode="json")
    routes = sorted({r for r, _ in lay.coder_def.routes(lay.env, lay.options)})
    body = {"coder": lay.coder_name, "options": opts, "labels": list(lay.labels or []),
            "routes": {r: route_identity(cfg, r) for r in routes}}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def model_backed(lay: Layer) -> bool:
    """The layer asks a model (a judge, the subject, an NLI model...), not only rules."""
    return bool(lay.coder_def.routes(lay.env, lay.options))


def kappa_interval(labels: Sequence[str | None], gold: Sequence[str], *, seed: int = 0,
                   level: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """Cohen's kappa and a percentile bootstrap interval over control rows (resamples where
    kappa is undefined are left out)."""
    a = [str(x) for x in labels]
    k = cohen_kappa(a, list(gold))
    if k is None or len(gold) < 2:
        return k, None, None
    rng = np.random.default_rng(seed)
    idx = np.arange(len(gold))
    ks = []
    for _ in range(KAPPA_RESAMPLES):
        pick = rng.choice(idx, size=len(idx), replace=True)
        v = cohen_kappa([a[i] for i in pick], [gold[i] for i in pick])
        if v is not None:
            ks.append(v)
    if not ks:
        return k, None, None
    lo, hi = np.quantile(ks, [(1 - level) / 2, (1 + level) / 2])
    return k, float(lo), float(hi)


def rater_score(name: str, labels: Sequence[str | None], gold: Sequence[str], seed: int = 0) -> dict[str, Any]:
    """Accuracy with its Wilson interval, the chance level (the share of the most common
    gold label: what always answering it would score), kappa with its interval, and
    whether the rater is better than chance (kappa's lower bound above 0)."""
    correct = sum(x == g for x, g in zip(labels, gold, strict=True))
    acc = wilson(correct, len(gold))
    chance = Counter(gold).most_common(1)[0][1] / len(gold) if gold else None
    k, k_lo, k_hi = kappa_interval(labels, gold, seed=seed)
    better = k_lo is not None and k_lo > 0
    return {"rater": name, "n": len(gold), "accuracy": acc.value, "ci_low": acc.ci_low, "ci_high": acc.ci_high,
            "chance": chance, "kappa": k, "kappa_low": k_lo, "kappa_high": k_hi, "better_than_chance": better,
            "confusion": confusion(labels, gold)}


def confusion(labels: Sequence[str | None], gold: Sequence[str]) -> dict[str, Any]:
    """The confusion matrix: rows the gold label, columns the rater's (a missing label,
    an abstention, is its own column `none`)."""
    from sklearn.metrics import confusion_matrix

    got = ["none" if x is None else str(x) for x in labels]
    order = list(dict.fromkeys([*sorted(set(gold)), *sorted(set(got) - set(gold))]))
    if not gold:
        return {"labels": order, "matrix": []}
    return {"labels": order, "matrix": confusion_matrix(list(gold), got, labels=order).tolist()}


def record(cfg: AuditConfig, lay: Layer, result: Mapping[str, Any]) -> bool:
    """Store a calibration result of `lay` in the run cache; returns whether the layer's
    own rater (the panel majority, or the layer) is better than chance."""
    from biasaudit.store import Store

    own = result["raters"][-1]
    passed = bool(own["better_than_chance"])
    store = Store(cfg.runtime.cache)
    try:
        store.record_calibration(coder_key(cfg, lay), lay.name, passed, dict(result))
    finally:
        store.close()
    return passed


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def calibration_problems(cfg: AuditConfig, plan: CodingPlan, spec: str = "SPEC") -> dict[str, tuple[str, str]]:
    """Layer -> (kind, message) of the problem its stored calibration shows: failed (not
    better than chance), or missing where the layer requires one."""
    from biasaudit.store import Store

    layers = {n: lay for n, lay in plan.layers.items() if model_backed(lay)}
    if not layers:
        return {}
    cache = Path(cfg.runtime.cache)
    found: dict[str, dict[str, Any] | None] = {n: None for n in layers}
    if cache.is_file():
        store = Store(cache, readonly=True)
        try:
            for n, lay in layers.items():
                found[n] = store.last_calibration(coder_key(cfg, lay))
        finally:
            store.close()
    out: dict[str, tuple[str, str]] = {}
    for n, lay in layers.items():
        got = found[n]
        if got is None:
            if lay.spec.require_calibration:
                out[n] = (
                    "uncalibrated_judge",
                    f"layer {n!r} requires calibration (require_calibration: true) and its coder has no "
                            f"stored calibration: run `biasaudit calibrate spec={spec} --layer {n}`")
            continue
        if got["passed"]:
            continue
        own = got["raters"][-1]
        bad = [r["rater"] for r in got["raters"] if not r.get("better_than_chance")]
        out[n] = (
            "judge_calibration",
            f"the coder of layer {n!r} is not better than chance on its control set "
                    f"(calibrated {_when(got['recorded'])}: accuracy {_fmt(own['accuracy'])} vs chance "
                    f"{_fmt(own.get('chance'))}, kappa {_fmt(own.get('kappa'))} [{_fmt(own.get('kappa_low'))}, "
                    f"{_fmt(own.get('kappa_high'))}]; not better than chance: {', '.join(bad)})")
    return out


__all__ = ["calibration_problems", "coder_key", "confusion", "kappa_interval", "model_backed", "rater_score", "record"]
