"""Cross-run comparison (`biasaudit compare`): side-by-side headline estimates with each
run's swept settings, rankings by distance from the no-bias reference, paired tests
between runs on the same units (matched by stimulus content hash and condition, with the
reason where two runs are not paired: `compare_paired`), ranking stability over
metric-parameter sweeps, and each method's own cross-run analyses (registered by the
method packages, e.g. token probability versus NLI across subjects)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from .compare_paired import paired, rankings, run_label
from .errors import BiasAuditError
from .outcome import varying_overrides
from .registry import METHODS, METRICS
from .stats import Estimate
from .summary import RunSummary

Runs = list[tuple[Path, RunSummary]]


def _check_summary(f: Path, data: dict[str, Any]) -> RunSummary:
    """A summary.json edited or damaged by hand fails here with its file, not deep in an
    analysis with a traceback."""
    try:
        s = RunSummary.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise BiasAuditError(f"summary.json is not as biasaudit writes it ({where}: {err['msg']})", file=str(f),
                             hint="remove that run folder from the comparison, or re-render it "
                                  "(biasaudit report <run folder>)") from None
    for mid, m in s.metrics.items():
        if m.headline not in m.estimates:
            raise BiasAuditError(f"summary.json: metric {mid!r} lacks its headline estimate", file=str(f),
                                 hint="re-render the run (biasaudit report <run folder>)")
    return s


def collect(paths: list[Path]) -> Runs:
    runs = []
    for p in paths:
        files = [p] if p.is_file() and p.name == "summary.json" else sorted(p.rglob("summary.json"))
        for f in files:
            if "compare" in f.parent.parts[-1:]:
                continue
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError) as exc:  # cut short, not UTF-8, not JSON
                raise BiasAuditError(f"summary.json is not readable JSON ({str(exc)[:80]})", file=str(f),
                                     hint="remove that run folder from the comparison, or re-render it "
                                          "(biasaudit report <run folder>)") from None
            if isinstance(data, dict) and "metrics" in data:  # suite summaries hold no metrics of their own
                runs.append((f.parent, _check_summary(f, data)))
    if not runs:
        raise BiasAuditError("no run folders (summary.json) found", file=", ".join(map(str, paths)),
                             hint="give a sweep folder or run folders written by `biasaudit run`")
    return runs


def _headline(s: RunSummary, mid: str) -> Estimate:
    m = s.metrics[mid]
    return m.estimates[m.headline]


SIDE_BY_SIDE_COLUMNS = ["audit", "model", "setting", "metric", "estimate", "value", "ci_low", "ci_high", "n",
                        "stimuli", "cells", "method", "reference", "overall", "run"]


def settings(runs: Runs) -> list[str]:
    """Each run's overrides that differ between the runs (the swept settings), as text."""
    shown = varying_overrides([list(s.reproducibility.get("overrides") or []) for _, s in runs])
    return [" ".join(ovs) for ovs in shown]


def side_by_side(runs: Runs, setting: list[str]) -> list[dict[str, Any]]:
    rows = []
    for (path, s), st in zip(runs, setting, strict=True):
        for mid, m in s.metrics.items():
            e = _headline(s, mid)
            rows.append({"audit": s.audit.name, "model": s.model.name, "setting": st, "metric": mid,
                         "estimate": m.headline, "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
                         "n": e.n, "stimuli": e.clusters if e.clusters is not None else e.n, "cells": e.cells,
                         "method": e.method, "reference": m.reference, "overall": s.overall, "run": path.name})
    return rows


def analyses(runs: Runs) -> dict[str, dict[str, Any]]:
    """Every method's own cross-run analysis that applies to these runs."""
    out: dict[str, dict[str, Any]] = {}
    for name, mdef in METHODS.items():
        if mdef.cross_run is None:
            continue
        section = mdef.cross_run(runs)
        if section is not None:
            out[name] = section.model_dump(mode="json")
    return out


def sweep_stability(runs: Runs) -> list[dict[str, Any]]:
    """For each audit/metric swept over metric parameters: the ranking of subjects under
    every setting, and its Kendall tau-b against the setting closest to the metric's
    defaults (the paper's robustness-to-alpha/beta table)."""
    from scipy.stats import kendalltau

    groups: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    params_of: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for _, s in runs:
        for mid, m in s.metrics.items():
            key = (s.audit.name, mid)
            setting = json.dumps(m.params, sort_keys=True)
            value = _headline(s, mid).value
            if value is not None:
                groups.setdefault(key, {}).setdefault(setting, {})[s.model.name] = value
            params_of.setdefault(key, {})[setting] = m.params
    out = []
    for (audit, mid), settings in groups.items():
        if len(settings) < 2:
            continue
        all_params = list(params_of[(audit, mid)].values())
        varying = sorted(k for k in all_params[0] if len({json.dumps(p.get(k)) for p in all_params}) > 1)
        name = ""
        for _, s in runs:
            if mid in s.metrics:
                name = s.metrics[mid].name
                break
        defaults = METRICS.get(name).params().model_dump() if name in METRICS else {}

        dist = {st: _distance(st, defaults, varying) for st in settings}
        base = min(settings, key=lambda st: dist[st])
        base_rank = sorted(settings[base], key=lambda subj: -settings[base][subj])
        rows = []
        for setting, values in sorted(settings.items()):
            p = json.loads(setting)
            ranking = sorted(values, key=lambda subj: -values[subj])
            common = [x for x in base_rank if x in values]
            tau, pval = (None, None)
            if len(common) >= 2:
                t = kendalltau([settings[base][x] for x in common], [values[x] for x in common], variant="b")
                tau, pval = (None if np.isnan(t.statistic) else float(t.statistic),
                             None if np.isnan(t.pvalue) else float(t.pvalue))
            rows.append({"setting": ", ".join(f"{k}={p.get(k)}" for k in varying), "ranking": ranking,
                         "values": values, "tau_b": tau, "p_value": pval, "default": setting == base,
                         "top3_kept": ranking[:3] == base_rank[:3]})
        out.append({"audit": audit, "metric": mid, "varying": varying, "rows": rows,
                    "subjects": sorted({x for v in settings.values() for x in v})})
    return out


def _distance(setting: str, defaults: dict[str, Any], varying: list[str]) -> int:
    p = json.loads(setting)
    return sum(p.get(k) != defaults.get(k) for k in varying)


def compare(paths: list[Path]) -> dict[str, Any]:
    runs = collect(paths)
    setting = settings(runs)
    return {
        "runs": [{"path": str(p), "label": run_label(p, s), "model": s.model.name, "setting": st,
                  "overrides": list(s.reproducibility.get("overrides") or [])}
                 for (p, s), st in zip(runs, setting, strict=True)],
        "side_by_side": {"columns": SIDE_BY_SIDE_COLUMNS, "rows": side_by_side(runs, setting)},
        "rankings": rankings(runs, setting),
        "paired": paired(runs, setting),
        "sweep_stability": sweep_stability(runs),
        "analyses": analyses(runs),
    }
