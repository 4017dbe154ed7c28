"""Paired comparisons and rankings for `biasaudit compare`.

Runs of one audit that scored the same units (stimulus x prompt condition, from each
metric's `items`) are compared pair by pair on those units: McNemar's test on 0/1
outcomes (exact below 25 discordant pairs), else Wilcoxon's signed-rank test on the
per-stimulus mean difference of the continuous item score; the effect is the mean paired
difference with a paired bootstrap interval that resamples stimuli. p-values are
Holm-adjusted across the pairs of runs of one metric. A paired test sees a small,
consistent difference that two overlapping marginal intervals hide.

A unit is matched by content, not by row id: the item's `stimulus_sha` (sha256 of the
stimulus's fields) and its condition (factor levels, else the cell). Two runs are not
paired, with the reason in `pairing`, when their metric definitions differ (method,
metric, parameters such as `mode`: refused, no difference shown), when they read
different data files (`data.sha256`), when either run's items carry no content hash
(summaries of older versions), or when they share no unit; the last three get the
difference of the headlines with the conservative independent-runs interval instead.

Runs are ranked by bias magnitude: the distance of the headline from the metric's declared
no-bias reference (`MetricResult.reference`, e.g. 50 for a preference score), smallest
first; equal distances share a rank. A metric that declares no reference is ranked by
its value, smallest first (the suite's `magnitude`), and says so.

Every pair of runs is a test, so their number grows as the square of the runs: a metric
compared over more than `MAX_PAIRED_RUNS` runs (`biasaudit compare --max-paired-runs`)
gets no paired tests, with a note saying why; its ranking and side-by-side rows are
still shown (they grow linearly).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from biasaudit.records.compare import (
    CompareResult,
    PairedGroup,
    PairedRow,
    RankingGroup,
    RankingRow,
)
from biasaudit.records.estimate import Estimate
from biasaudit.records.json import JSONObject
from biasaudit.records.metric_result import ItemRow
from biasaudit.records.summary import RunSummary
from biasaudit.runner.suite import magnitude
from biasaudit.stats import holm
from biasaudit.stats.paired import mcnemar, paired_difference, paired_wilcoxon

Runs = list[tuple[Path, RunSummary]]

RANKING_COLUMNS = ["audit", "metric", "rank", "run", "model", "setting", "value", "ci_low", "ci_high", "n",
                   "reference", "distance"]
MAX_PAIRED_RUNS = 50
"""Runs of one metric compared pair by pair (50 runs: 1,225 paired tests)."""
PAIRED_COLUMNS = ["audit", "metric", "run_a", "run_b", "setting_a", "setting_b", "units", "stimuli", "test",
                  "statistic", "p_value", "p_holm", "differs", "difference", "diff_low", "diff_high", "scale",
                  "note", "units_a", "units_b", "pairing"]


def run_label(path: Path, s: RunSummary) -> str:
    return f"{s.model.name} ({path.name})"


def _round(x: float) -> float:
    # distances equal up to float noise (50 - 41.6667 vs 58.3333 - 50) are ties
    return float(f"{x:.10g}")


def rankings(runs: Runs, settings: Sequence[str]) -> list[RankingGroup]:
    """Per audit and metric: every run's headline, its distance from the reference and rank."""
    from scipy.stats import rankdata
    groups: dict[tuple[str, str], list[RankingRow]] = {}
    for (path, s), setting in zip(runs, settings, strict=True):
        for mid, m in s.metrics.items():
            e = m.estimates[m.headline]
            groups.setdefault((s.audit.name, f"{mid}.{m.headline}"), []).append(RankingRow(
                audit=s.audit.name, metric=f"{mid}.{m.headline}", rank=None, run=run_label(path, s),
                model=s.model.name, setting=setting, value=e.value, ci_low=e.ci_low, ci_high=e.ci_high,
                n=e.n, reference=m.reference,
                distance=None if (d := magnitude(e.value, m.reference)) is None else _round(d)))
    out = []
    for (audit, metric), rows in groups.items():
        ref = rows[0].reference
        distances = [r.distance for r in rows if r.distance is not None]
        ranks = iter(rankdata(distances, method="min").tolist() if distances else [])
        ranked = [r.model_copy(update={"rank": int(next(ranks))}) if r.distance is not None else r for r in rows]
        ranked.sort(key=lambda r: (r.rank is None, r.rank or 0))
        out.append(RankingGroup(audit=audit, metric=metric, reference=ref, columns=RANKING_COLUMNS, rows=ranked,
                                order=("distance from the no-bias reference, smallest first" if ref is not None else
                                       "value, smallest first (the metric declares no no-bias reference: the value "
                                       "itself is the magnitude, as in suites)")))
    return out


def _condition(it: ItemRow) -> str:
    """The prompt condition of an item: its factor levels (whatever the factor order of
    the cell id), else its cell."""
    if it.levels:
        return json.dumps(it.levels, sort_keys=True, ensure_ascii=False, default=str)
    return str(it.cell or "")


def _hashed(items: list[ItemRow]) -> bool:
    return all(it.stimulus_sha for it in items)


def _units(items: list[ItemRow], key: str) -> dict[tuple[str, str], list[float]] | None:
    """Unit (stimulus content hash, condition) -> the items' values of `key` (None when
    some item lacks it)."""
    out: dict[tuple[str, str], list[float]] = {}
    for it in items:
        v = it.value(key)
        if not isinstance(v, int | float) or not np.isfinite(float(v)):
            return None
        out.setdefault((str(it.stimulus_sha), _condition(it)), []).append(float(v))
    return out


def _n_units(items: list[ItemRow]) -> int:
    return len({(str(it.stimulus_sha), _condition(it)) for it in items})


class PairOutcome(TypedDict, total=False):
    """What comparing two runs of one metric gives: the columns of a `PairedRow` after the
    runs' names (the keys a test or a refusal does not fill stay out, so None there)."""

    units: int
    units_a: int
    units_b: int
    stimuli: int
    test: str
    statistic: float
    p_value: float
    difference: float | None
    diff_low: float | None
    diff_high: float | None
    scale: str
    note: str
    pairing: str


def paired_test(items_a: list[ItemRow], items_b: list[ItemRow], *, seed: int = 0) -> PairOutcome | None:
    """The paired comparison of two runs' items on their shared units, matched by the
    stimulus's content hash and the condition (None: none shared, or an item without a
    content hash)."""
    if not _hashed(items_a) or not _hashed(items_b):
        return None
    for key in ("outcome", "diff"):
        ua, ub = _units(items_a, key), _units(items_b, key)
        if not ua or not ub:
            continue
        shared = sorted(set(ua) & set(ub))
        if not shared:
            return None
        a = [float(np.mean(ua[k])) for k in shared]
        b = [float(np.mean(ub[k])) for k in shared]
        stimuli = [k[0] for k in shared]
        binary = key == "outcome" and all(len(ua[k]) == 1 and len(ub[k]) == 1 for k in shared)
        t = mcnemar(a, b) if binary else paired_wilcoxon(a, b, clusters=stimuli)
        d = paired_difference(a, b, clusters=stimuli, seed=seed)
        return PairOutcome(units=len(shared), units_a=len(ua), units_b=len(ub), stimuli=len(set(stimuli)),
                           test=t.method, statistic=t.statistic, p_value=t.p_value, difference=d.value,
                           diff_low=d.ci_low, diff_high=d.ci_high,
                           scale="share of units (0/1 outcome)" if key == "outcome" else "per-item score",
                           note=t.note, pairing=f"paired on {_of(len(shared), len(ua), len(ub))} (content hash)")
    return None


def _of(k: int, n_a: int, n_b: int) -> str:
    return f"{k} of {n_a} units" if n_a == n_b else f"{k} of {n_a} (A) / {n_b} (B) units"


@dataclass(frozen=True)
class _Entry:
    """One run's items of one metric, and what decides whether they pair with another's."""

    label: str
    setting: str
    items: list[ItemRow]
    headline: Estimate
    data_sha: str | None
    method: str
    name: str
    params: JSONObject


def _short(sha: str | None) -> str:
    return "none" if sha is None else sha[:12]


def refusal(a: _Entry, b: _Entry) -> str | None:
    """Why two runs' metrics measure different things (None: the same definition)."""
    diffs = []
    if a.method != b.method:
        diffs.append(f"method {a.method or '?'} vs {b.method or '?'}")
    if a.name != b.name:
        diffs.append(f"metric {a.name} vs {b.name}")
    for k in sorted(set(a.params) | set(b.params)):
        va, vb = a.params.get(k), b.params.get(k)
        if json.dumps(va, sort_keys=True, default=str) != json.dumps(vb, sort_keys=True, default=str):
            diffs.append(f"{k}={va} vs {vb}")
    return f"different metric definitions ({'; '.join(diffs)})" if diffs else None


def _data_differs(a: _Entry, b: _Entry) -> bool:
    return a.data_sha is not None and b.data_sha is not None and a.data_sha != b.data_sha


def unpaired_reason(a: _Entry, b: _Entry) -> str:
    """Why two runs of one metric definition that are not paired are not."""
    hashed_a, hashed_b = _hashed(a.items), _hashed(b.items)
    shared, matched = 0, ""
    if hashed_a and hashed_b:
        ka = {(it.stimulus_sha, _condition(it)) for it in a.items}
        kb = {(it.stimulus_sha, _condition(it)) for it in b.items}
        shared = len(ka & kb)
        matched = f"{_of(shared, len(ka), len(kb))} match by content"
    if _data_differs(a, b):
        return (f"different data files (data.sha256 {_short(a.data_sha)} vs {_short(b.data_sha)}"
                + (f"; {matched}" if matched else "") + ")")
    if not hashed_a or not hashed_b:
        which = " and ".join(x for x, h in (("A", hashed_a), ("B", hashed_b)) if not h)
        return (f"the items of {which} carry no stimulus content hash (written by an older biasaudit; "
                "re-render with `biasaudit report <run folder>` to pair)")
    if shared:
        return f"no finite `outcome` or `diff` on every item of both runs ({matched})"
    return f"no shared units ({matched})"


def _pair_row(a: _Entry, b: _Entry) -> PairOutcome:
    refused = refusal(a, b)
    res = paired_test(a.items, b.items) if refused is None and not _data_differs(a, b) else None
    if res is not None:
        return res
    out = PairOutcome(units=0)
    if _hashed(a.items) and _hashed(b.items):
        out.update(PairOutcome(units_a=_n_units(a.items), units_b=_n_units(b.items)))
    if refused is not None:
        out.update(PairOutcome(test="refused", scale="not compared", pairing=f"not paired: {refused}"))
        return out
    d, lo, hi = unpaired_delta(a.headline, b.headline)
    out.update(PairOutcome(test="unpaired", difference=d, diff_low=lo, diff_high=hi,
                           scale="headline (unpaired: independent-runs interval)",
                           pairing=f"not paired: {unpaired_reason(a, b)}"))
    return out


def paired(runs: Runs, settings: Sequence[str], max_runs: int = MAX_PAIRED_RUNS) -> list[PairedGroup]:
    """Per audit and metric, every pair of runs with items: paired on their shared units
    (Holm-adjusted), or not paired with the reason. A metric with more than `max_runs`
    runs gets no rows and a `note` instead (the pairs grow as the square of the runs)."""
    groups: dict[tuple[str, str], list[_Entry]] = {}
    for (path, s), setting in zip(runs, settings, strict=True):
        for mid, m in s.metrics.items():
            if m.items:
                groups.setdefault((s.audit.name, f"{mid}.{m.headline}"), []).append(_Entry(
                    label=run_label(path, s), setting=setting, items=m.items, headline=m.estimates[m.headline],
                    data_sha=s.data.sha256, method=s.audit.method, name=m.name, params=m.params))
    out: list[PairedGroup] = []
    for (audit, metric), entries in groups.items():
        if len(entries) > max_runs:
            n = len(entries)
            out.append(PairedGroup(audit=audit, metric=metric, columns=PAIRED_COLUMNS, rows=[],
                                   note=f"no paired tests: {n} runs, over the limit of {max_runs} runs per metric "
                                        f"(every pair would be a test: {n * (n - 1) // 2:,} tests); compare fewer "
                                        "runs, or raise the limit with `biasaudit compare --max-paired-runs N`"))
            continue
        rows = [PairedRow(audit=audit, metric=metric, run_a=ea.label, run_b=eb.label, setting_a=ea.setting,
                          setting_b=eb.setting, **_pair_row(ea, eb)) for ea, eb in itertools.combinations(entries, 2)]
        if not rows:
            continue
        tested = {i: r.p_value for i, r in enumerate(rows) if r.p_value is not None}
        if tested:
            reject, adj = holm(list(tested.values()))
            for i, rj, p in zip(tested, reject, adj, strict=True):
                rows[i] = rows[i].model_copy(update={"p_holm": float(p), "differs": bool(rj)})
        out.append(PairedGroup(audit=audit, metric=metric, columns=PAIRED_COLUMNS, rows=rows))
    return out


def unpaired_delta(a: Estimate, b: Estimate) -> tuple[float | None, float | None, float | None]:
    """a - b with the interval that treats the runs as independent normal estimates
    (half-width sqrt(h_a^2 + h_b^2)): conservative for runs on the same stimuli; shown only
    where the runs are not paired (different data files, items without a content hash, no
    shared unit)."""
    if a.value is None or b.value is None:
        return None, None, None
    d = a.value - b.value
    if a.half_width is None or b.half_width is None:
        return d, None, None
    h = float(np.hypot(a.half_width, b.half_width))
    return d, d - h, d + h


def _num(x: Any) -> str:
    return "n/a" if x is None else (f"{x:.4g}" if isinstance(x, float) else str(x))


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(f"{c:<{w}}" for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def lines(result: CompareResult) -> list[str]:
    """What `biasaudit compare` prints: per metric, the runs ranked with their swept
    settings, and the paired tests (plain aligned columns: readable in a CI log)."""
    out: list[str] = []
    tests = {(g.audit, g.metric): g.rows for g in result.paired}
    notes = {(g.audit, g.metric): g.note for g in result.paired if g.note}
    for g in result.rankings:
        out.append(f"{g.audit} / {g.metric}: ranked by {g.order}"
                   + (f" (reference {_num(g.reference)})" if g.reference is not None else ""))
        rows = [["rank", "model", "setting", "value [95% CI]", "distance"]]
        for r in g.rows:
            rows.append([_num(r.rank), r.model, r.setting or "(defaults)",
                         f"{_num(r.value)} [{_num(r.ci_low)}, {_num(r.ci_high)}]", _num(r.distance)])
        out += ["  " + x for x in _columns(rows)]
        pt = tests.get((g.audit, g.metric), [])
        if pt:
            rows = [["paired test", "A", "B", "units", "difference A-B [95% CI]", "p", "p (Holm)"]]
            for p in pt:
                rows.append([str(p.test), p.setting_a or p.run_a, p.setting_b or p.run_b, str(p.units),
                             f"{_num(p.difference)} [{_num(p.diff_low)}, {_num(p.diff_high)}]",
                             _num(p.p_value), _num(p.p_holm)])
            out += ["  " + x for x in _columns(rows)]
            for p in pt:
                out.append(f"  {p.setting_a or p.run_a} vs {p.setting_b or p.run_b}: {p.pairing}")
        elif (g.audit, g.metric) in notes:
            out.append(f"  {notes[(g.audit, g.metric)]}")
        else:
            out.append("  no paired test: the runs share no scored units")
    return out


__all__ = ["lines", "MAX_PAIRED_RUNS", "PAIRED_COLUMNS", "RANKING_COLUMNS", "paired", "paired_test", "rankings", "refusal", "run_label",
           "unpaired_delta", "unpaired_reason"]
