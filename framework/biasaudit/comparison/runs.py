"""Cross-run comparison (`biasaudit compare`): side-by-side headline estimates with each
run's swept settings, rankings by distance from the no-bias reference, paired tests
between runs on the same units (matched by stimulus content hash and condition, with the
reason where two runs are not paired: `compare_paired`), ranking stability over
metric-parameter sweeps, and each method's own cross-run analyses (registered by the
method packages, e.g. token probability versus NLI across subjects)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from biasaudit.comparison.paired import MAX_PAIRED_RUNS, paired, rankings, run_label
from biasaudit.errors import BiasAuditError
from biasaudit.records.compare import (
    CompareResult,
    CompareRun,
    CrossRunAnalysis,
    SideBySide,
    SideBySideRow,
    StabilityRow,
    SweepStability,
)
from biasaudit.records.estimate import Estimate
from biasaudit.records.json import JSONObject
from biasaudit.records.summary import RunSummary, upgraded
from biasaudit.registry import METHODS, METRICS
from biasaudit.report.outcome import varying_overrides

Runs = list[tuple[Path, RunSummary]]


def _check_summary(f: Path, data: dict[str, Any]) -> RunSummary:
    """A summary.json edited or damaged by hand fails here with its file, not deep in an
    analysis with a traceback."""
    try:
        s = RunSummary.model_validate(upgraded(data, file=str(f)))
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
    bad = _non_finite(s.model_dump(mode="python"))
    if bad is not None:  # biasaudit writes null for an undefined number, never NaN or Infinity
        raise BiasAuditError(f"summary.json: {bad} is not a finite number", file=str(f),
                             hint="biasaudit writes null for an undefined value: re-render the run "
                                  "(biasaudit report <run folder>) or remove it from the comparison")
    return s


def _non_finite(obj: Any, path: str = "") -> str | None:
    """The key path of the first NaN or infinity in a parsed summary (`NaN`, `Infinity`
    or a string "NaN" that validation read as a float), else None."""
    if isinstance(obj, float) and not np.isfinite(obj):
        return path or "(root)"
    if isinstance(obj, dict):
        items: Any = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        return None
    for k, v in items:
        found = _non_finite(v, f"{path}[{k}]" if isinstance(k, int) else f"{path}.{k}" if path else str(k))
        if found is not None:
            return found
    return None


def summary_files(root: Path, notes: list[str]) -> list[Path]:
    """Every summary.json under `root`. A symlinked folder is followed when its target lies
    inside `root` (each real folder once, so a link cycle ends), or when it is a run folder
    itself (a folder of links to runs kept elsewhere); a link to any other folder outside
    `root`, a broken link or a loop is skipped with the reason added to `notes`."""
    top = root.resolve()
    seen: set[Path] = set()
    out: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        real = folder.resolve()
        if real in seen:
            if folder.is_symlink():
                notes.append(f"skipped {folder}: a symlink to {real}, which is compared already")
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            notes.append(f"skipped {folder}: cannot list it ({exc.strerror or type(exc).__name__})")
            continue
        for e in entries:
            p = Path(e.path)
            try:
                if e.is_symlink():
                    try:
                        target = p.resolve(strict=True)
                    except (OSError, RuntimeError):
                        notes.append(f"skipped {p}: a broken symlink or a symlink loop")
                        continue
                    outside = target != top and top not in target.parents
                    if outside and target.is_dir() and not (target / "summary.json").is_file():
                        notes.append(f"skipped {p}: a symlink to {target}, outside {root} and not a run folder "
                                     "(give that folder as a path of its own to compare the runs in it)")
                        continue
                    if outside and target.is_dir():  # a run folder kept elsewhere: its summary only
                        out.append(p / "summary.json")
                        continue
                if e.is_dir():
                    stack.append(p)
                elif e.name == "summary.json" and e.is_file():
                    out.append(p)
            except OSError:
                continue
    return sorted(out)


def collect(paths: list[Path], notes: list[str] | None = None) -> Runs:
    """The runs under `paths` (run folders, sweep or suite folders, summary.json files);
    each run once, however many links lead to it. Why a folder was skipped goes to `notes`."""
    notes = [] if notes is None else notes
    runs = []
    seen: dict[Path, Path] = {}
    for p in paths:
        files = [p] if p.is_file() and p.name == "summary.json" else summary_files(p, notes)
        for f in files:
            real = f.resolve()
            if real in seen:
                if seen[real] != f:
                    notes.append(f"skipped {f.parent}: the same run as {seen[real].parent}")
                continue
            seen[real] = f
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
    shown = varying_overrides([list(s.reproducibility.overrides) for _, s in runs])
    return [" ".join(ovs) for ovs in shown]


def side_by_side(runs: Runs, setting: list[str]) -> list[SideBySideRow]:
    rows = []
    for (path, s), st in zip(runs, setting, strict=True):
        for mid, m in s.metrics.items():
            e = _headline(s, mid)
            rows.append(SideBySideRow(audit=s.audit.name, model=s.model.name, setting=st, metric=mid,
                                      estimate=m.headline, value=e.value, ci_low=e.ci_low, ci_high=e.ci_high,
                                      n=e.n, stimuli=e.clusters if e.clusters is not None else e.n, cells=e.cells,
                                      method=e.method, reference=m.reference, overall=s.overall, run=path.name))
    return rows


def analyses(runs: Runs) -> dict[str, CrossRunAnalysis]:
    """Every method's own cross-run analysis that applies to these runs."""
    out: dict[str, CrossRunAnalysis] = {}
    for name, mdef in METHODS.items():
        if mdef.cross_run is None:
            continue
        section = mdef.cross_run(runs)
        if section is not None:
            # as compare.json holds it: a plug-in's own fields are kept
            # the fields compare.json's record has (a plug-in's section may add its own)
            out[name] = CrossRunAnalysis.model_validate(section.model_dump(mode="json",
                                                                           include=set(CrossRunAnalysis.model_fields)))
    return out


def sweep_stability(runs: Runs) -> list[SweepStability]:
    """For each audit/metric swept over metric parameters: the ranking of subjects under
    every setting, and its Kendall tau-b against the setting closest to the metric's
    defaults (the paper's robustness-to-alpha/beta table)."""
    from scipy.stats import kendalltau

    groups: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    params_of: dict[tuple[str, str], dict[str, JSONObject]] = {}
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
        # in JSON form, as the runs' own parameters are (a tuple default equals a list read back)
        defaults = METRICS.get(name).params().model_dump(mode="json") if name in METRICS else {}

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
            rows.append(StabilityRow(setting=", ".join(f"{k}={p.get(k)}" for k in varying), ranking=ranking,
                                     values=values, tau_b=tau, p_value=pval, default=setting == base,
                                     top3_kept=ranking[:3] == base_rank[:3]))
        out.append(SweepStability(audit=audit, metric=mid, varying=varying, rows=rows,
                                  subjects=sorted({x for v in settings.values() for x in v})))
    return out


def _distance(setting: str, defaults: JSONObject, varying: list[str]) -> int:
    p = json.loads(setting)
    return sum(p.get(k) != defaults.get(k) for k in varying)


def compare(paths: list[Path], notes: list[str] | None = None,
            max_paired_runs: int = MAX_PAIRED_RUNS) -> CompareResult:
    """The comparison of the runs under `paths`; why a symlinked or repeated folder was
    skipped goes to `notes`. Paired tests (every pair of runs of a metric) only for a
    metric with at most `max_paired_runs` runs."""
    runs = collect(paths, notes)
    setting = settings(runs)
    return CompareResult(
        runs=[CompareRun(path=str(p), label=run_label(p, s), model=s.model.name, setting=st,
                         overrides=list(s.reproducibility.overrides))
              for (p, s), st in zip(runs, setting, strict=True)],
        side_by_side=SideBySide(columns=SIDE_BY_SIDE_COLUMNS, rows=side_by_side(runs, setting)),
        rankings=rankings(runs, setting),
        paired=paired(runs, setting, max_paired_runs),
        sweep_stability=sweep_stability(runs),
        analyses=analyses(runs),
    )
