"""A run folder (or a suite folder) read into the viewer's records (`model.py`).

It reads what the run wrote and nothing else: summary.json (the estimates, the items
with their differences, the verdicts), responses.jsonl (every prompt and answer),
codes.jsonl (every layer's code and its evidence) and manifest.json. The stimuli's
fields come from the data file the manifest names when it is still there unchanged (its
sha256 checked); otherwise from the fields the metrics' items carry, and the page says
so. No store, no model, no write: a folder copied into an evidence pack views the same.

Bounds: at most `max_rows` responses in all (a suite shares them fairly between its
runs), each text cut to `TEXT_CHARS`, a page of at most `MAX_BYTES` of text; what is
left out is counted in a notice the page shows above its tables.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from biasaudit._util.fileio import open_input, read_capped
from biasaudit._util.trail import count_lines, stream_records
from biasaudit._version import __version__
from biasaudit.errors import BiasAuditError, StoreError
from biasaudit.metrics.card import ScoredText
from biasaudit.plan.requests import Request
from biasaudit.records.estimate import Estimate, Subset
from biasaudit.records.manifest import RunManifest
from biasaudit.records.metric_result import ITEM_KEYS, ItemRow, MetricResult
from biasaudit.records.responses import Response, ScoredTokens
from biasaudit.records.suite import SuiteSummary
from biasaudit.records.summary import RunSummary, upgraded
from biasaudit.report.answers import answer_text, clip, prompt_text
from biasaudit.report.csv_export import by_fields
from biasaudit.report.viewer.model import ViewCode, ViewData, ViewEstimate, ViewRow, ViewRun
from biasaudit.report.viewer.scoring import SCORED_KINDS, Scored, card_metrics, options, scorings

MAX_ROWS = 5000
"""Responses embedded by default (`biasaudit view --max-rows`)."""
TEXT_CHARS = 4000
"""Most characters of a prompt or an answer."""
FIELD_CHARS = 500
"""Most characters of a stimulus field, a coder's evidence or a non-text output."""
MAX_BYTES = 48 * 2**20
"""Most characters of text in one page, whatever `max_rows` says."""
MAX_LINE = 16 * 2**20
"""A responses.jsonl / codes.jsonl line longer than this is skipped (and counted)."""
JSON_LIMIT = 256 * 2**20
_R = TypeVar("_R", bound=BaseModel)
HINT = "give a run folder written by `biasaudit run`, or a suite's folder (of a sweep, one of its run folders)"


def load_view(folder: Path, *, max_rows: int = MAX_ROWS) -> ViewData:
    """The viewer's data for a run folder or a suite folder."""
    if not folder.is_dir():
        raise StoreError("not a folder", file=str(folder), hint=HINT)
    raw = _read_json(folder / "summary.json", "summary")
    if isinstance(raw, dict) and "suite" in raw:
        return _suite(folder, raw, max_rows)
    summary = _validated(RunSummary, folder / "summary.json", upgraded(raw, file=str(folder / "summary.json")))
    notices: list[str] = []
    data = ViewData(kind="run", title=summary.audit.title or summary.audit.name, version=__version__)
    _add_run(data, folder, ".", summary, summary.audit.name, max_rows, notices)
    data.notices = notices
    return data


def _read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise StoreError(f"no {path.name} here (the run did not finish, or this is not a run folder)",
                         file=str(path.parent), hint=HINT)
    try:
        return json.loads(read_capped(path, JSON_LIMIT, what=what, error=StoreError).decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise StoreError(f"{path.name} is not valid JSON ({str(exc)[:80]})", file=str(path),
                         hint="run the audit again (or `biasaudit report RUN_DIR`)") from None


def _validated(record: type[_R], path: Path, raw: Any) -> _R:
    """summary.json read into its record (a run's or a suite's), or one line naming the
    first key it lacks."""
    try:
        return record.model_validate(raw)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise StoreError(f"summary.json lacks a usable {where!r}", file=str(path), hint=HINT) from None


def _suite(folder: Path, raw: Any, max_rows: int) -> ViewData:
    suite = SuiteSummary.read_raw(raw, file=str(folder / "summary.json"), error=StoreError, hint=HINT)
    top = folder.resolve()
    members: list[tuple[str, Path, str]] = []
    notices: list[str] = []
    for row in suite.rows:
        label = f"{row.member} / {row.subject}"
        run_dir = (folder / row.report).parent if row.report else None
        # a summary names its runs' folders: only folders inside the suite's are read
        if run_dir is None or not (run_dir.resolve() == top or top in run_dir.resolve().parents):
            notices.append(f"{label}: no run folder inside the suite folder; left out")
            continue
        if not (run_dir / "summary.json").is_file():
            notices.append(f"{label}: {run_dir.relative_to(folder)} has no summary.json; left out")
            continue
        members.append((label, run_dir, str(run_dir.relative_to(folder))))
    data = ViewData(kind="suite", title=suite.suite.title or suite.suite.name, version=__version__)
    counts = [_count_lines(d / "responses.jsonl") for _, d, _ in members]
    for (label, run_dir, rel), cap in zip(members, _shares(counts, max_rows), strict=True):
        path = run_dir / "summary.json"
        summary = _validated(RunSummary, path, upgraded(_read_json(path, "summary"), file=str(path)))
        _add_run(data, run_dir, rel, summary, label, cap, notices)
    data.notices = notices
    return data


def _shares(counts: list[int], total: int) -> list[int]:
    """Each run's share of `total` rows: the smallest runs first take all they have, the
    rest split what is left evenly."""
    caps = [0] * len(counts)
    left = total
    order = sorted(range(len(counts)), key=lambda i: counts[i])
    for k, i in enumerate(order):
        caps[i] = min(counts[i], left // (len(order) - k))
        left -= caps[i]
    return caps


def _count_lines(path: Path) -> int:
    if not path.is_file():
        return 0
    with open_input(path, 2**62, what="responses.jsonl", error=StoreError) as f:
        return count_lines(f)


def _text(v: Any, limit: int = FIELD_CHARS) -> str:
    if isinstance(v, str):
        return clip(v, limit)
    try:
        return clip(json.dumps(v, ensure_ascii=False, default=str, separators=(",", ":")), limit)
    except (ValueError, RecursionError):
        return clip(str(v), limit)


def _stimulus_fields(summary: RunSummary, run_dir: Path, notices: list[str], label: str) -> dict[str, dict[str, Any]]:
    """Stimulus id -> fields: from the data file when it is unchanged since the run,
    else from the metrics' items."""
    from biasaudit.data import load_stimuli
    from biasaudit.spec import validate_config

    why = ""
    try:
        m = RunManifest.read_raw(_read_json(run_dir / "manifest.json", "manifest"), file=str(run_dir / "manifest.json"),
                                 error=StoreError)
        spec_file = Path(m.spec_file)
        cfg = validate_config(m.config, spec_file=str(spec_file), choices=m.choices)
        stimuli = load_stimuli(cfg.stimuli, spec_file, cfg.runtime.limits)
        if stimuli.sha256 == m.data.sha256:
            return {s.id: dict(s.fields) for s in stimuli.stimuli}
        why = "the data file changed since the run"
    except (BiasAuditError, OSError, UnicodeError, KeyError, TypeError, ValueError) as exc:
        why = exc.one_line() if isinstance(exc, BiasAuditError) else f"{type(exc).__name__}: {exc}"
    out: dict[str, dict[str, Any]] = {}
    for r in summary.metrics.values():
        for item in r.items:
            fields = out.setdefault(item.stimulus, {})
            # what the flat row in summary.json holds besides ITEM_KEYS: the stimulus's
            # fields, then the method's other numbers (a later key of the same name wins)
            for k, v in {**item.fields, **item.values}.items():
                if k not in ITEM_KEYS and _scalar(v):
                    fields.setdefault(k, v)
    notices.append(f"{label}: stimulus fields from the metrics' items, not the data file ({clip(why, 200)})")
    return out


def _scalar(v: object) -> bool:
    """Text or a finite number (summary.json is untrusted: NaN and Infinity parse)."""
    return isinstance(v, str) or (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v))


def _diff(item: ItemRow) -> float | None:
    d = item.diff
    return float(d) if d is not None and _scalar(d) else None


class _Items:
    """Metric id -> which responses its items stand for, and their differences: an item
    names its stimulus and cell (its stimulus alone when the cell is not a design cell,
    as `report.answers` reads them)."""

    def __init__(self, summary: RunSummary) -> None:
        cells = set(summary.design.cells)
        self.by_cell: dict[str, dict[tuple[str, str], float | None]] = {}
        self.by_stimulus: dict[str, dict[str, float | None]] = {}
        for mid, r in summary.metrics.items():
            bc: dict[tuple[str, str], float | None] = {}
            bs: dict[str, float | None] = {}
            for row in r.items:
                sid, cell, d = row.stimulus, row.cell or "", _diff(row)
                target: dict[Any, float | None] = bc if cell in cells else bs
                k: Any = (sid, cell) if cell in cells else sid
                old = target.get(k)
                target[k] = d if old is None or (d is not None and abs(d) > abs(old)) else old
            if bc or bs:
                self.by_cell[mid], self.by_stimulus[mid] = bc, bs

    def of(self, stimulus: str, cell: str) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for mid, bc in self.by_cell.items():
            if (stimulus, cell) in bc:
                out[mid] = bc[(stimulus, cell)]
            elif stimulus in self.by_stimulus[mid]:
                out[mid] = self.by_stimulus[mid][stimulus]
        return out


def _metric_of(name: str, metrics: Mapping[str, MetricResult]) -> tuple[str, str] | None:
    """A threshold's `metric` (`id` or `id.estimate`) as (metric id, estimate name)."""
    if name in metrics:
        return name, metrics[name].headline
    for mid in metrics:
        if name.startswith(mid + "."):
            return mid, name[len(mid) + 1:]
    return None


def _add_run(data: ViewData, run_dir: Path, rel: str, summary: RunSummary, label: str, cap: int,
             notices: list[str]) -> None:
    idx = len(data.runs)
    by = list(dict.fromkeys(f for r in summary.metrics.values() for f in by_fields(r.params)))
    fields = _stimulus_fields(summary, run_dir, notices, label)
    items = _Items(summary)
    verdicts: list[tuple[str, str, str | None, str]] = []
    for v in summary.verdicts:
        found = _metric_of(v.metric, summary.metrics)
        if found is not None:
            verdicts.append((found[0], found[1], v.cell, v.verdict))
    run = ViewRun(label=label, audit=summary.audit.name, run_id=summary.run_id, model=summary.model.name,
                  overall=summary.overall, folder=rel, metrics=list(summary.metrics),
                  metrics_with_items=list(items.by_cell), cells=list(summary.design.cells), group_fields=by)
    data.runs.append(run)
    rows = _rows(run_dir, idx, cap, fields, by, items, verdicts, data, notices, label, summary)
    run.responses, run.shown = rows
    if run.shown < run.responses:
        notices.append(f"{label}: showing the first {run.shown} of {run.responses} responses "
                       f"(biasaudit view --max-rows N shows more; every response is in responses.jsonl)")
    first = next((i for i, r in enumerate(data.rows) if r.run == idx), len(data.rows))
    behind = _Behind(summary, data.rows[first:first + run.shown], first, fields)
    data.estimates.extend(_estimates(summary, idx, behind, verdicts))
    _add_review(data, run_dir, idx, summary, first, run.shown)


def _add_review(data: ViewData, run_dir: Path, idx: int, summary: RunSummary, first: int, shown: int) -> None:
    """Review in the page (review.py): the run's label layers and its responses as sheet rows."""
    from biasaudit.report.viewer.review import run_review

    rows = data.rows[first:first + shown]
    coded: dict[str, set[str]] = {}
    for r in rows:
        for c in r.codes:
            if c.status == "coded" and c.code:
                coded.setdefault(c.layer, set()).add(c.code)
    data.review.append(run_review(run_dir, str(run_dir), idx, summary, rows, first, coded))


def _rows(run_dir: Path, idx: int, cap: int, fields: Mapping[str, Mapping[str, Any]], by: list[str], items: _Items,
          verdicts: list[tuple[str, str, str | None, str]], data: ViewData, notices: list[str],
          label: str, summary: RunSummary) -> tuple[int, int]:
    """Adds the run's first `cap` responses (with their codes) to `data.rows`; returns
    (responses in the run, responses added)."""
    path = run_dir / "responses.jsonl"
    if not path.is_file():
        notices.append(f"{label}: no responses.jsonl (a re-rendered or cut run): estimates only")
        return 0, 0
    total = _count_lines(path)
    skipped = [0]
    start = len(data.rows)
    by_unit: dict[str, ViewRow] = {}
    scored: list[Scored] = []
    used = sum(_size(r) for r in data.rows)
    with open_input(path, 2**62, what="responses.jsonl", error=StoreError) as f:
        for obj in stream_records(f, skipped, max_line=MAX_LINE, kind="responses", file=str(path)):
            if len(data.rows) - start >= cap or used >= MAX_BYTES:
                break
            got = _row(obj, idx, fields, by, items, verdicts)
            if got is None:
                skipped[0] += 1
                continue
            row, out = got
            used += _size(row)
            if out is not None:
                scored.append(Scored(row=len(data.rows), unit=(row.cell, row.stimulus, row.variant, row.sample),
                                     sentence=ScoredText(slot=row.slot, text=row.prompt, out=out)))
            data.rows.append(row)
            by_unit[f"{row.cell}|{row.stimulus}|{row.slot}|{row.variant}|{row.sample}"] = row
    # only a run with scored responses asks the registry for its metrics' cards (loading
    # every method package costs seconds that a run of generations need not pay)
    for i, sc in (scorings(scored, card_metrics(summary.metrics), fields) if scored else {}).items():
        data.rows[i].scoring = sc
    codes = run_dir / "codes.jsonl"
    if codes.is_file():
        with open_input(codes, 2**62, what="codes.jsonl", error=StoreError) as f:
            for obj in stream_records(f, skipped, max_line=MAX_LINE, kind="codes", file=str(codes)):
                target = by_unit.get(str(obj.get("unit", "")))
                if target is not None:
                    target.codes.append(_code(obj))
    if skipped[0]:
        notices.append(f"{label}: {skipped[0]} line(s) of responses.jsonl / codes.jsonl could not be read; skipped")
    if used >= MAX_BYTES:
        notices.append(f"{label}: the page holds at most {MAX_BYTES // 2**20} MiB of text; later responses left out")
    return total, len(data.rows) - start


def _size(row: ViewRow) -> int:
    """The characters of text a row adds to the page (its codes are bounded per layer)."""
    scoring = 0 if row.scoring is None else sum(len(s.text) + sum(len(t.text) + 40 for t in s.tokens)
                                                for s in row.scoring.sentences)
    return (len(row.prompt) + len(row.answer) + len(row.output) + sum(len(k) + len(v) for k, v in row.fields.items())
            + scoring + sum(len(o.option) + 40 for o in row.options))


def _row(obj: Mapping[str, Any], idx: int, fields: Mapping[str, Mapping[str, Any]], by: list[str], items: _Items,
         verdicts: list[tuple[str, str, str | None, str]]) -> tuple[ViewRow, ScoredTokens | None] | None:
    """The row of a responses.jsonl line, and its scored tokens when it is a scoring
    probe's (read into sentences and totals with its pair, `scoring.scorings`)."""
    try:
        req = Request.model_validate({**(obj.get("request") or {}), "key": str(obj.get("key", ""))})
        resp = Response.model_validate({"key": req.key, "status": obj.get("status", "failed"),
                                        "output": obj.get("output"), "error": obj.get("error")})
    except ValidationError:
        return None
    cell, sid = str(obj.get("cell", "")), str(obj.get("stimulus", ""))
    f = fields.get(sid, {})
    answer = answer_text(req, resp)
    mine = items.of(sid, cell)
    marks = sorted({v for mid, _, vcell, v in verdicts
                    if (mid in mine or mid not in items.by_cell) and (vcell is None or vcell == cell)})
    raw = obj.get("levels")
    levels: dict[str, Any] = raw if isinstance(raw, dict) else {}
    out: ScoredTokens | None = None
    if resp.ok and resp.output is not None and req.kind in SCORED_KINDS:
        try:
            out = ScoredTokens.model_validate(resp.output)
        except ValidationError:  # a damaged output: shown as the file has it
            out = None
    opts = options(req.kind, resp.output) if resp.ok and resp.output is not None and not answer else []
    row = ViewRow(
        run=idx, cell=cell, levels={str(k): _text(v, 200) for k, v in levels.items()}, stimulus=sid,
        slot=str(obj.get("slot", "")), variant=_int(obj.get("variant")), sample=_int(obj.get("sample")),
        groups={g: _text(f[g], 200) for g in by if g in f and f[g] is not None and f[g] != ""},
        fields={str(k): _text(v) for k, v in f.items()},
        prompt=clip(prompt_text(req), TEXT_CHARS), answer=clip(answer, TEXT_CHARS),
        output="" if answer or not resp.ok or out is not None or opts else _text(resp.output),
        options=opts, status=resp.status, error=_text(resp.error or ""), items=mine, verdicts=marks,
    )
    return row, out


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _code(obj: Mapping[str, Any]) -> ViewCode:
    label, value = obj.get("label"), obj.get("value")
    code = str(label) if label is not None else f"{value:.4g}" if isinstance(value, int | float) else ""
    raw = obj.get("detail")
    detail: Mapping[str, object] = raw if isinstance(raw, dict) else {}  # as the file has it: a damaged line still shows
    why = "; ".join(f"{k}: {_text(v, 300)}" for k, v in detail.items())
    return ViewCode(layer=_text(obj.get("layer", ""), 200), status=_text(obj.get("status", ""), 40), code=_text(code, 200),
                    source=_text(obj.get("source", ""), 200), why=clip(why, FIELD_CHARS))


class _Behind:
    """Which responses of a run are behind an estimate: those of the items it is computed
    from. The items come from the estimate's own record (`Estimate.subset`: the groups,
    the levels; the cell of a per-cell estimate) applied to its metric's item rows, never
    from its name; a response belongs to an item of its stimulus and cell (its stimulus
    alone when the item is not per design cell, as `report.answers` reads them). A metric
    that writes no items (its estimates rest on every response of its cells) is filtered
    on the responses' own stimulus fields and levels."""

    def __init__(self, summary: RunSummary, rows: list[ViewRow], first: int,
                 fields: Mapping[str, Mapping[str, Any]]) -> None:
        self.summary, self.fields = summary, fields
        self.design = set(summary.design.cells)
        self.by_cell: dict[tuple[str, str], list[int]] = {}
        self.by_stimulus: dict[str, list[int]] = {}
        self.rows = rows
        for i, r in enumerate(rows):
            self.by_cell.setdefault((r.stimulus, r.cell), []).append(first + i)
            self.by_stimulus.setdefault(r.stimulus, []).append(first + i)
        self.first = first

    def cell_of(self, i: int) -> str:
        return self.rows[i - self.first].cell

    def items(self, result: MetricResult, subset: Subset | None, cell: str) -> list[ItemRow]:
        """The metric's items an estimate over `subset` (in `cell`: a per-cell one) is
        computed from; an item not per design cell counts in every cell."""
        return [it for it in result.items if (not cell or it.cell == cell or it.cell not in self.design)
                and in_subset(it.stimulus, it.fields, it.levels, subset)]

    def responses(self, result: MetricResult, subset: Subset | None, cell: str) -> tuple[list[int], int | None]:
        """(indices into the page's rows, items behind; None when the metric writes none)."""
        if not result.items:
            return [self.first + i for i, r in enumerate(self.rows)
                    if (not cell or r.cell == cell)
                    and in_subset(r.stimulus, self.fields.get(r.stimulus, {}), r.levels, subset)], None
        found: dict[int, None] = {}
        items = self.items(result, subset, cell)
        for it in items:
            hit = self.by_cell.get((it.stimulus, it.cell or ""), []) if it.cell in self.design \
                else [i for i in self.by_stimulus.get(it.stimulus, []) if not cell or self.cell_of(i) == cell]
            found.update(dict.fromkeys(hit))
        return sorted(found), len(items)


def in_subset(stimulus: str, fields: Mapping[str, Any], levels: Mapping[str, str] | None, subset: Subset | None,
              ) -> bool:
    """Whether an item (or a response) with these stimulus fields and cell levels is in
    `subset` (a field's value as text, as `stats.disaggregate.by_group` splits them; a
    field the item lacks reads as "")."""
    if subset is None:
        return True
    lv = levels or {}
    return ((subset.stimuli is None or stimulus in subset.stimuli)
            and all(str(fields.get(f, "")) in vs for f, vs in subset.where.items())
            and all(f in lv and str(lv[f]) in vs for f, vs in subset.levels.items())
            and (not subset.any_of or any(all(str(fields.get(f, "")) == v for f, v in combo.items())
                                          for combo in subset.any_of)))


def _describe(subset: Subset | None) -> tuple[str, list[str], str, str]:
    """(field, its values, factor, the group in words) of an estimate's subset, for the
    estimate table's group column and the banner."""
    if subset is None:
        return "", [], "", ""
    parts = [f"{f} = {' vs '.join(v)}" for f, v in subset.where.items()]
    parts += [f"condition {f} = {' vs '.join(v)}" for f, v in subset.levels.items()]
    fld, vals = next(iter(subset.where.items()), ("", []))
    factor = next(iter(subset.levels), "")
    if not fld and factor:
        vals = subset.levels[factor]
    return fld, list(vals), factor, "; ".join(parts)


def _estimates(summary: RunSummary, idx: int, behind: _Behind,
               verdicts: list[tuple[str, str, str | None, str]]) -> list[ViewEstimate]:
    out = []

    def add(mid: str, r: MetricResult, name: str, cell: str, e: Estimate, subset: Subset | None) -> None:
        fld, vals, factor, group = _describe(subset)
        rows, items = behind.responses(r, subset, cell)
        marks = sorted({v for vm, vn, vc, v in verdicts if vm == mid and vn == name and (vc or "") == cell})
        out.append(ViewEstimate(run=idx, metric=mid, estimate=name, headline=name == r.headline, cell=cell, field=fld,
                                factor=factor, values=vals, group=group, rows=rows, items=items,
                                value=_finite(e.value), ci_low=_finite(e.ci_low), ci_high=_finite(e.ci_high), n=e.n,
                                method=e.method, note=clip(e.note or "", 300), verdicts=marks))

    for mid, r in summary.metrics.items():
        for name, e in r.estimates.items():
            add(mid, r, name, "", e, e.subset)
            for ge in (e.groups or {}).values():
                add(mid, r, name, "", ge, ge.subset)
        for name, cells in (r.cells or {}).items():
            # a per-cell estimate: the items of its cell, of the pooled estimate's subset
            top = r.estimates.get(name)
            for cell, e in cells.items():
                add(mid, r, name, cell, e, e.subset if e.subset is not None else top.subset if top else None)
    return out


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


__all__ = ["MAX_ROWS", "in_subset", "load_view"]
