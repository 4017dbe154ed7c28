"""summary.json's earlier layouts read into today's: one pure step per format version,
each a function on the raw JSON object (dict -> dict) that changes only what its version
changed. Every reader of summary.json upgrades it (`records.summary.upgraded`) before
validating, so the typed record (which refuses unknown keys) only ever sees the current
layout.

Format 1 (no `format_version` key, or 1): estimates carried no typed group; the group an
estimate was about was known only from its name (`rate.gender.woman`) and the metric's
`by` fields. Format 2: every estimate of a metric that is about one group of a breakdown
(or a contrast's two) says so in `group` (`records.estimate.GroupRef`), set where it was
made. The 1 -> 2 step reads format 1's groups the one way format 1 defined them: from the
name, as that version's estimates.csv did, so an old run's CSV and report come out as
they were written. This is the only place an estimate's name is read for its group, and
only for files that have nothing else.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from biasaudit.records.json import JSONObject, JSONValue

CURRENT = 2
"""summary.json's layout as this version writes it (`RunSummary.format_version`)."""


def _by_fields(params: JSONValue) -> list[str]:
    by = params.get("by") if isinstance(params, dict) else None
    return [f for f in by if isinstance(f, str)] if isinstance(by, list) else []


def _v1_group(name: str, by: list[str], subset: JSONValue) -> JSONObject | None:
    """Format 1's group of estimate `name` (its estimates.csv `group` column): the text
    after the first `.<field>.` of a `by` field or of their intersection (`a+b`), longest
    field first at the same place, `.paired` dropped. A contrast's two groups are taken
    from its subset when they spell the text (a level may hold `-`)."""
    fields = sorted({*by, *(["+".join(by)] if len(by) > 1 else [])}, key=len, reverse=True)
    dotted = "." + name
    hits = [(dotted.find(f".{f}."), f) for f in fields if f".{f}." in dotted]
    if not hits:
        return None
    i, field = min(hits, key=lambda h: (h[0], -len(h[1])))
    text = dotted[i + len(field) + 2:].removesuffix(".paired")
    if not text:
        return None
    levels: list[JSONValue] = [text]
    where = subset.get("where") if isinstance(subset, dict) else None
    pair = where.get(field) if isinstance(where, dict) else None
    if isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair) \
            and "-".join(str(x) for x in pair) == text:
        levels = list(pair)
    return {"factor": field, "levels": levels, "reference": None}


def _grouped(name: str, e: JSONValue, by: list[str]) -> JSONValue:
    if not isinstance(e, dict) or "group" in e:
        return e
    group = _v1_group(name, by, e.get("subset"))
    return {**e, "group": group} if group is not None else e


def _with_groups(estimates: JSONValue, by: list[str]) -> JSONValue:
    """Estimate name -> estimate, each with its group."""
    if not isinstance(estimates, dict):
        return estimates
    return {name: _grouped(name, e, by) for name, e in estimates.items()}


def _cells_with_groups(cells: JSONValue, by: list[str]) -> JSONValue:
    """Estimate name -> cell id -> estimate: a cell's estimate is about its name's group."""
    if not isinstance(cells, dict):
        return cells
    return {name: {cell: _grouped(name, e, by) for cell, e in per.items()} if isinstance(per, dict) else per
            for name, per in cells.items()}


def _v1_design(raw: JSONObject) -> JSONObject:
    """A format-1 summary written before its design carried the probe, the factors and the
    cells' levels has them only in its report views (`method`, `conditions`): taken from
    there, so its views are built again as they were."""
    design = raw.get("design")
    if not isinstance(design, dict) or "probe" in design:
        return raw
    design = dict(design)
    method, cond = raw.get("method"), raw.get("conditions")
    if isinstance(method, dict):
        design.update(probe=method.get("probe") or "", kind=method.get("design") or "",
                      factors=method.get("factors") or {})
    if isinstance(cond, dict):
        levels: JSONObject = {}
        spreads = cond.get("spreads")
        for sp in spreads if isinstance(spreads, list) else []:
            cells = sp.get("cells") if isinstance(sp, dict) else None
            for c in cells if isinstance(cells, list) else []:
                if isinstance(c, dict) and "cell" in c:
                    levels[str(c["cell"])] = c.get("levels") or {}
        design["levels"] = levels
    return {**raw, "design": design}


def upgrade_1_to_2(raw: JSONObject) -> JSONObject:
    """Format 1 -> 2: each metric's estimates (pooled and per cell) get their `group`; a
    design written without its factors takes them from the views (`_v1_design`)."""
    out = copy.deepcopy(_v1_design(raw))
    metrics = out.get("metrics")
    if isinstance(metrics, dict):
        for m in metrics.values():
            if not isinstance(m, dict):
                continue
            by = _by_fields(m.get("params"))
            m["estimates"] = _with_groups(m.get("estimates"), by)
            if "cells" in m:
                m["cells"] = _cells_with_groups(m["cells"], by)
    out["format_version"] = 2
    return out


STEPS: dict[int, Callable[[JSONObject], JSONObject]] = {1: upgrade_1_to_2}
"""Format version -> the step that reads it into the next one."""

UNRECORDED: dict[int, dict[str, frozenset[str]]] = {
    1: {"metric": frozenset({"detail"}), "estimate": frozenset({"group"})},
}
"""Format version -> the fields (of a metric, of an estimate) that a file of that version
may not have recorded. Format 1 kept no estimate's typed `group` (its step above gives the
group as format 1's names said it, without the reference level they did not say), and
covers the summaries written before metrics kept their `detail` (the method's own
intermediate values). No step can make up what such a file never held. Only fields named
here: any other field a metric lacks is read as what the file says (a forged file that
deleted a metric's validity flags is not an older version)."""


def _estimates_as_recorded(mine: JSONValue, was: JSONValue, later: frozenset[str]) -> JSONValue:
    if not isinstance(mine, dict):
        return mine
    was = was if isinstance(was, dict) else {}
    out: JSONObject = {}
    for name, e in mine.items():
        w = was.get(name)
        out[name] = ({k: v for k, v in e.items() if k not in later or (isinstance(w, dict) and k in w)}
                     if isinstance(e, dict) else e)
    return out


def as_recorded(summary: JSONObject, written: JSONObject, version: int) -> JSONObject:
    """`summary` (today's layout) with only what a file of `version` recorded, next to
    `written` (that file as read, before its upgrade): each field of `UNRECORDED[version]`
    is left out where `written` does not hold it. What `biasaudit verify` compares: the
    packed summary upgraded and the re-computed one, each as the pack's version recorded
    it (a field its biasaudit did not keep says nothing about the pack's numbers)."""
    later = UNRECORDED.get(version)
    metrics, was = summary.get("metrics"), written.get("metrics")
    if not later or not isinstance(metrics, dict):
        return summary
    was = was if isinstance(was, dict) else {}
    kept: JSONObject = {}
    for name, m in metrics.items():
        w = was.get(name)
        w = w if isinstance(w, dict) else {}
        if not isinstance(m, dict):
            kept[name] = m
            continue
        out = {k: v for k, v in m.items() if k not in later["metric"] or k in w}
        if "estimates" in out:
            out["estimates"] = _estimates_as_recorded(out["estimates"], w.get("estimates"), later["estimate"])
        cells, wcells = out.get("cells"), w.get("cells")
        if isinstance(cells, dict):
            wcells = wcells if isinstance(wcells, dict) else {}
            out["cells"] = {e: _estimates_as_recorded(per, wcells.get(e), later["estimate"])
                            for e, per in cells.items()}
        kept[name] = out
    return {**summary, "metrics": kept}


__all__ = ["CURRENT", "STEPS", "UNRECORDED", "as_recorded", "upgrade_1_to_2"]
