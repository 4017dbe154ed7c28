"""Review in the viewer page: what the page needs to write a review sheet that the
`human` coder reads back like one from `biasaudit annotate export` (coding/human_sheet.py).

For each run, the label layers a reviewer can label with (each with its label set and
the sheet's `allowed_labels` legend, as `annotate export` builds them) and the run's
identity the sampling record carries; for each response the page embeds, its unit id,
request key and the record's hashes of the answer and prompt text the sheet will show.
The hashes are computed here, from the run's own files, so the page never hashes text
(a file:// page may have no `crypto.subtle`) and the sheet it writes is checked exactly
as an exported one: against its record at validation, against the run's answers when
the layer codes.

The sheet's `answer` is the coder's input text (`coding.stage.response_text`, as the
export writes it), which may differ from the answer the card shows (a classification's
label vs its probabilities as JSON) and is never cut: where the card's text is not the
sheet's, the sheet's text travels beside it. A response whose text cannot be written as
UTF-8 (a lone surrogate from a server) is not offered for review, with the reason.

The record says `selection: chosen`: a reviewer's picks are a convenience sample, and the
gold report gives agreement on them but no rate over all units (coding/human_review.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from biasaudit._util.fileio import open_input
from biasaudit._util.trail import stream_records
from biasaudit.coding.human_sheet import FORMAT, answer_hash, label_legend, shown_hash
from biasaudit.coding.stage import response_text
from biasaudit.errors import StoreError
from biasaudit.plan.requests import Request
from biasaudit.records.annotation import FORMAT_VERSION
from biasaudit.records.manifest import RunManifest
from biasaudit.records.responses import Response
from biasaudit.records.summary import RunSummary
from biasaudit.registry import CODERS
from biasaudit.report.answers import prompt_text
from biasaudit.report.viewer.model import ViewReviewLayer, ViewRow, ViewRowReview, ViewRunReview

MAX_LINE = 16 * 2**20


def _human(coder: str) -> bool:
    """A layer of human labels (`CoderDef.is_human`) is what a review writes, not what it labels."""
    return coder in CODERS and CODERS.get(coder).is_human


def unit_id(row: ViewRow) -> str:
    """The coding unit of a response (`coding.stage.make_units`)."""
    return f"{row.cell}|{row.stimulus}|{row.slot}|{row.variant}|{row.sample}"


def _layers(summary: RunSummary, config: Mapping[str, Any], coded: Mapping[str, set[str]]) -> list[ViewReviewLayer]:
    """The run's label layers (not `human` ones), each with its label set and legend as
    `annotate export` gives them (the spec's `labels`, else the labels the layer coded)."""
    spec = config.get("coding")
    spec = spec if isinstance(spec, dict) else {}
    out = []
    for lay in summary.coding.layers:
        if lay.value_type != "label" or _human(lay.coder):
            continue
        labels = list(lay.labels) if lay.labels is not None else sorted(coded.get(lay.name, set()))
        if not labels:
            continue
        own = spec.get(lay.name)
        raw = own.get("label_meanings") if isinstance(own, dict) else None
        meanings = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else None
        out.append(ViewReviewLayer(name=lay.name, labels=labels, legend=label_legend(labels, meanings),
                                   coded=int(lay.status.get("coded", 0))))
    return out


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def run_review(run_dir: Path, shown_as: str, run: int, summary: RunSummary, rows: Sequence[ViewRow], first: int,
               coded: Mapping[str, set[str]]) -> ViewRunReview:
    """What the page needs to write review sheets of one run: `rows` are the run's
    embedded responses (`first`: the index of the first in the page's rows), `coded` the
    labels each layer coded (from codes.jsonl), `shown_as` the run folder as the sampling
    record names it."""
    try:
        m = RunManifest.read_raw(_json(run_dir / "manifest.json"), file=str(run_dir / "manifest.json"),
                                 error=StoreError)
    except (StoreError, ValidationError, ValueError) as exc:
        why = exc.one_line() if isinstance(exc, StoreError) else "manifest.json is not a run manifest"
        return ViewRunReview(run=run, note=f"no review in the page: {why}")
    layers = _layers(summary, m.config, coded)
    out = ViewRunReview(run=run, run_id=m.run_id, run_dir=shown_as, spec_sha256=m.spec_sha256, format=FORMAT,
                        format_version=FORMAT_VERSION, layers=layers)
    if not layers:
        out.note = "no review in the page: the run has no coding layer with labels"
        return out
    by_unit = {unit_id(r): first + i for i, r in enumerate(rows)}
    path = run_dir / "responses.jsonl"
    if not path.is_file():
        return out
    odd = 0
    with open_input(path, 2**62, what="responses.jsonl", error=StoreError) as f:
        for obj in stream_records(f, [0], max_line=MAX_LINE, kind="responses", file=str(path)):
            idx = by_unit.pop(f"{obj.get('cell', '')}|{obj.get('stimulus', '')}|{obj.get('slot', '')}|"
                              f"{obj.get('variant', 0)}|{obj.get('sample', 0)}", None)
            if idx is None:
                if not by_unit:
                    break
                continue
            got = _row_review(obj, idx, rows[idx - first])
            if got is None:
                odd += rows[idx - first].status == "ok"  # a failed request has no text to label
                continue
            out.rows.append(got)
    if odd:
        out.note = f"{odd} answered response(s) cannot be written to a sheet (text that is not valid UTF-8); not reviewable"
    return out


def _row_review(obj: Mapping[str, Any], idx: int, row: ViewRow) -> ViewRowReview | None:
    """The sheet row of an answered response, as `annotate export` writes it (None: no
    answer text, or text a UTF-8 file cannot hold)."""
    try:
        req = Request.model_validate({**(obj.get("request") or {}), "key": str(obj.get("key", ""))})
        resp = Response(key=req.key, status=obj.get("status", "failed"),
                        output=obj.get("output") if isinstance(obj.get("output"), dict) else None)
    except (ValidationError, TypeError):
        return None
    answer = response_text(resp)
    prompt = prompt_text(req)
    if answer is None or not _utf8(answer) or not _utf8(prompt):
        return None
    return ViewRowReview(row=idx, unit=unit_id(row), key=req.key, answer_sha256=answer_hash(answer),
                         shown_sha256=shown_hash(answer), prompt_sha256=shown_hash(prompt),
                         answer=None if answer == row.answer else answer,
                         prompt=None if prompt == row.prompt else prompt)


def _json(path: Path) -> Any:
    import json

    from biasaudit._util.fileio import read_capped

    if not path.is_file():
        raise StoreError("no manifest.json", file=str(path.parent), hint="view a run folder written by `biasaudit run`")
    return json.loads(read_capped(path, 256 * 2**20, what="manifest", error=StoreError).decode("utf-8"))


__all__ = ["run_review", "unit_id"]
