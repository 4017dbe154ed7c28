"""`estimates.csv` and `items.csv` beside summary.json: the run's numbers as flat tables for
pandas, R or a spreadsheet. Both are built from the summary alone, so they hold exactly
the numbers the report shows.

estimates.csv: one row per estimate, pooled and per cell, and per group where an estimate
has a breakdown; the `group` column names the group (`<field>=<value>`, `<field>=<a>-<b>`
for a pairwise contrast) of every per-group estimate, from the group recorded where the
estimate was made (`Estimate.group`: `gender=woman`, an intersection
`gender+race=woman+Black`), never from the estimate's name. items.csv: one row per scored item (pair, triple, question...) of each
metric, with the item's fields and its per-item value, then (when the run passes them)
the item's `prompt` and the model's `answer` (report/answers.py: the texts are kept out
of summary.json; a stimulus field already named so keeps its name and the texts take
`model_prompt` / `model_answer`).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from biasaudit.records.estimate import Estimate
from biasaudit.records.json import JSONObject
from biasaudit.records.metric_result import MetricResult

ESTIMATE_COLUMNS = ["metric", "estimate", "headline", "cell", "group", "value", "ci_low", "ci_high", "n",
                    "level", "method", "note"]


def by_fields(params: JSONObject) -> list[str]:
    """The stimulus fields a metric's `by` parameter names ([]: none, or the metric has no `by`)."""
    by = params.get("by")
    return [f for f in by if isinstance(f, str)] if isinstance(by, list) else []


def _finite(x: float | None) -> float | None:
    # as summary.json has it: a NaN or infinite float is written as null there
    return x if x is None or math.isfinite(x) else None


def _numbers(e: Estimate) -> dict[str, Any]:
    return {"value": _finite(e.value), "ci_low": _finite(e.ci_low), "ci_high": _finite(e.ci_high), "n": e.n,
            "level": _finite(e.level), "method": e.method, "note": e.note}


def _group(est: Estimate) -> str:
    return est.group.label if est.group is not None else ""


def _estimate_rows(metric: str, name: str, headline: bool, cell: str, est: Estimate,
                   group: str = "") -> Iterator[dict[str, Any]]:
    base = {"metric": metric, "estimate": name, "headline": headline, "cell": cell}
    yield {**base, "group": group, **_numbers(est)}
    for group, g in est.groups.items():
        yield {**base, "group": group, **_numbers(g)}


def estimate_rows(metrics: Mapping[str, MetricResult]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for mid, m in metrics.items():
        # the group each estimate is about, as it was recorded where it was made
        # (`Estimate.group`): never parsed back out of its name
        for name, est in m.estimates.items():
            rows.extend(_estimate_rows(mid, name, name == m.headline, "", est, _group(est)))
        for name, cells in m.cells.items():
            for cell, est in cells.items():
                rows.extend(_estimate_rows(mid, name, name == m.headline, cell, est, _group(est)))
    return rows


def item_rows(metrics: Mapping[str, MetricResult], texts: dict[str, list[dict[str, str]]] | None = None,
              ) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns (metric first, then every item field in first-seen order) and rows; with
    `texts` (metric id -> one {prompt, answer} per item), the two text columns last."""
    columns: dict[str, None] = {"metric": None}
    rows = []
    attached: list[tuple[dict[str, Any], dict[str, str]]] = []
    for mid, m in metrics.items():
        per_item = (texts or {}).get(mid) or []
        for n, item in enumerate(m.items):
            row = {"metric": mid}
            # the row as summary.json holds it (ItemRow's flat form): one column per key
            for k, v in item.model_dump(mode="json").items():
                if k == "levels" and isinstance(v, dict):  # one column per factor: filterable in a spreadsheet
                    for f, lv in v.items():
                        columns.setdefault(f"level.{f}", None)
                        row[f"level.{f}"] = lv
                    continue
                columns.setdefault(k, None)
                row[k] = json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v
            rows.append(row)
            if texts is not None:
                attached.append((row, per_item[n] if n < len(per_item) else {}))
    if texts is not None:
        names = {k: k if k not in columns else f"model_{k}" for k in ("prompt", "answer")}
        for k in names.values():
            columns.setdefault(k, None)
        for row, t in attached:
            for k, col in names.items():
                row[col] = t.get(k, "")
    return list(columns), rows


def _csv(columns: list[str], rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="raise", lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: _cell(row.get(k)) for k in columns})
    return buf.getvalue()


def _cell(v: Any) -> Any:
    """Empty for missing values; text that a spreadsheet would run as a formula is quoted
    with a leading apostrophe (stimuli are untrusted text)."""
    if v is None:
        return ""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") and not _is_number(v):
        return "'" + v
    return v


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def write_csvs(run_dir: Path, metrics: Mapping[str, MetricResult], write: Callable[[Path, str], None],
               texts: dict[str, list[dict[str, str]]] | None = None) -> None:
    write(run_dir / "estimates.csv", _csv(ESTIMATE_COLUMNS, estimate_rows(metrics)))
    columns, rows = item_rows(metrics, texts)
    write(run_dir / "items.csv", _csv(columns, rows))


def write_compare_csvs(out_dir: Path, comparison: dict[str, Any], write: Callable[[Path, str], None]) -> None:
    """compare.csv (side by side), rankings.csv and paired.csv beside compare.json."""
    sbs = comparison["side_by_side"]
    write(out_dir / "compare.csv", _csv(sbs["columns"], sbs["rows"]))
    for name in ("rankings", "paired"):
        groups = comparison.get(name) or []
        columns = groups[0]["columns"] if groups else ["audit", "metric"]
        write(out_dir / f"{name}.csv", _csv(columns, [r for g in groups for r in g["rows"]]))


__all__ = ["ESTIMATE_COLUMNS", "by_fields", "estimate_rows", "item_rows", "write_compare_csvs", "write_csvs"]
