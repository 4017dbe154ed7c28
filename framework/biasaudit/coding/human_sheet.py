"""The annotation sheet of human review: its columns, its sampling record, and how a
filled sheet is read back and checked.

`biasaudit annotate export` (runner/annotate.py) writes a sheet (csv or jsonl) with one
row per sampled unit: `unit_id`, the `prompt` and `answer` the humans read, the
`allowed_labels`, a blank `label` and a free `note` (with `--with-codes` also the
layer's `machine_label` and `rationale`). Beside it, `<sheet>.sample.json` records what
was sampled: the run, the layer and its labels, the strata and their sizes, the seed, and
for each sampled unit its subject request key and hashes of the answer and the prompt
shown. The `human` coder reads the filled sheet and checks it against that record, and
the record and each row's answer against the run it codes, so a sheet from another run,
an unknown unit, a label outside the set, a unit labelled twice or a row whose answer or
prompt was rewritten (people would label text the model never wrote) is one error line
naming the file and the row, and nothing of the sheet is read.

The hashes are in the record, not in sheet columns: the sheet stays a plain table to
fill in a spreadsheet, and a column anyone can edit beside the text it vouches for would
prove nothing. `shown_sha256` and `prompt_sha256` are sha256 of the text as shown with
its line ends made `\n` and its outer white space removed (`shown_hash`), so a
spreadsheet that rewrites line ends still reads back; `answer_sha256` is of the exact
answer. The record carries its `format_version` and is read through the upgrade
(records/upgrade/annotation_sample.py): a record written before 2026-11 has only
`answer_sha256`, and its upgrade sets `exact_answers`, so its sheet's answer cells must
be exactly as exported. The format is docs/coding-layers.md, "The sheet's
format": any other writer of sheets (the viewer) writes the same.

Sheet text is untrusted (model answers): a csv cell a spreadsheet would run as a formula
(starting with = + - @, a tab or a carriage return) gets a leading apostrophe, removed
again when the sheet is read back.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biasaudit._util.fileio import names_excerpt, read_capped, resolved
from biasaudit._util.trail import json_lines
from biasaudit.errors import DataError
from biasaudit.records.annotation import FORMAT, SampledUnit, SampleRecord
from biasaudit.records.codes import CodeDetail, Unit
from biasaudit.spec import RuntimeLimits

UNIT = "unit_id"
LABEL = "label"
PROMPT = "prompt"
ANSWER = "answer"
COLUMNS = (UNIT, PROMPT, ANSWER, "allowed_labels", LABEL, "note")
CODE_COLUMNS = ("machine_label", "rationale")
"""Added after `answer` with `--with-codes` (the review is then not blind)."""
ALL = "all"
"""The one stratum of a sample drawn without `--stratify`."""
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_MAX_RECORD = 256 * 2**20


def record_path(sheet: Path) -> Path:
    return sheet.with_name(sheet.name + ".sample.json")


def answer_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def shown_text(text: str) -> str:
    """Text as a sheet shows it, up to what a spreadsheet changes without anyone editing
    it: line ends (`\r\n`, `\r` become `\n`) and white space around the whole."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def shown_hash(text: str) -> str:
    return answer_hash(shown_text(text))


def _quoted_formula(text: str) -> bool:
    """Apostrophes (none or more), then what a spreadsheet runs as a formula."""
    rest = text.lstrip("'")
    return rest[:1] != "" and rest[:1] in _FORMULA


def safe_cell(text: str) -> str:
    """A csv cell a spreadsheet would run as a formula gets a leading apostrophe; so does
    one that already starts with apostrophes before such a character (an answer `'=x`),
    so that `unsafe_cell` gives every text back unchanged (the answer check compares it)."""
    return "'" + text if _quoted_formula(text) else text


def unsafe_cell(text: str) -> str:
    """`safe_cell` undone."""
    return text[1:] if text[:1] == "'" and _quoted_formula(text) else text


def stratum_of(unit: Unit, by: str | None) -> str:
    """The stratum of a unit: its cell (`cell`), its level of a factor, or the value of a
    stimulus field; `ALL` without `by`."""
    if by is None:
        return ALL
    if by == "cell":
        return unit.cell
    if by in unit.levels:
        return str(unit.levels[by])
    value = unit.fields.get(by)
    return "" if value is None else str(value)


def sheet_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], fmt: str) -> str:
    """The sheet as text: csv (every cell quoted, formulas defused) or jsonl."""
    if fmt == "jsonl":
        return json_lines({c: r.get(c) for c in columns} for r in rows)
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([safe_cell(str(r.get(c) if r.get(c) is not None else "")) for c in columns])
    return buf.getvalue()


def label_legend(labels: Sequence[str], meanings: Mapping[str, str] | None) -> str:
    """The sheet's `allowed_labels` cell: each label with its meaning where the layer gives
    one (`E = endorses the statement | QE = ...`), else the bare labels. The reviewer
    writes the label itself (`E`) in the `label` column."""
    return " | ".join(f"{lab} = {meanings[lab]}" if meanings and meanings.get(lab) else lab for lab in labels)


@dataclass(frozen=True)
class SheetLabel:
    unit: str
    label: str | None
    """None: left blank (not annotated)."""
    where: str
    """`row N` (csv, data rows counted from 1) or `line N` (jsonl)."""
    note: str = ""
    answer: str = ""
    """The answer the row shows (`shown_text`), checked against the run's (`check_run`)."""


@dataclass(frozen=True)
class FilledSheet:
    path: Path
    record: SampleRecord
    rows: dict[str, SheetLabel]
    """Unit id -> its row."""

    @property
    def labelled(self) -> int:
        return sum(r.label is not None for r in self.rows.values())


def read_record(sheet: Path, key: str) -> SampleRecord:
    """The sheet's sampling record, of any earlier format upgraded to today's
    (records/upgrade/annotation_sample.py); a newer format, an unknown key or a missing
    field is one error naming the record file."""
    rpath = record_path(sheet)
    fix = "keep the .sample.json file `biasaudit annotate export` wrote beside the sheet, or export again"
    if not rpath.is_file():
        raise DataError(f"no sampling record {rpath.name} beside the sheet", file=str(sheet), key=key, hint=fix)
    raw = read_capped(rpath, _MAX_RECORD, key=key, what="sampling record", error=DataError)
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise DataError(f"the sampling record is not usable (not JSON: {str(exc)[:80]})", file=str(rpath), key=key,
                        hint=fix) from None
    return SampleRecord.read_raw(obj, file=str(rpath), hint=fix)


def _raw_rows(path: Path, key: str, limits: RuntimeLimits) -> list[tuple[str, dict[str, Any]]]:
    """(where the row is: `line N` of a jsonl sheet, `row N` of a csv one, a row's text
    may span lines; the row)."""
    from biasaudit.data.readers import read_csv, read_jsonl

    if path.suffix.lower() == ".jsonl":
        lines: list[int] = []
        rows = read_jsonl(path, key=key, limits=limits, lines=lines)
        return [(f"line {n}", r) for n, r in zip(lines, rows, strict=True)]
    header, rows = read_csv(path, key=key, limits=limits)
    for col in (UNIT, LABEL, ANSWER, PROMPT):
        if col not in header:
            raise DataError(f"the sheet has no {col!r} column", file=str(path), key=key,
                            hint="save it as comma-separated UTF-8 csv with the columns `annotate export` wrote "
                                 f"(found: {names_excerpt(header)})")
    # a row with every cell empty (a spreadsheet's trailing row) is no row
    return [(f"row {i}", r) for i, r in enumerate(rows, start=1) if any(str(v).strip() for v in r.values())]


def _text(v: Any, path: Path, where: str, column: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise DataError(f"`{column}` is not text", file=str(path), key=where, hint=f"write the {column} as a string")
    return unsafe_cell(v).strip()


_RESTORE = ("restore the {what} cell as `biasaudit annotate export` wrote it (labels must be of the text the model "
            "wrote and the prompt it answered), or export the sheet again and copy the labels over by unit_id")


def _shown(row: Mapping[str, Any], column: str, path: Path, where: str, key: str) -> str:
    v = row.get(column)
    if not isinstance(v, str):
        raise DataError(f"{where}: no `{column}` text", file=str(path), key=key,
                        hint=_RESTORE.format(what=column) + " (the sheet needs the column to be checked)")
    return unsafe_cell(v)


def _changed(s: SampledUnit, answer: str, prompt: str, exact: bool) -> str | None:
    """What of a row differs from what was exported, by the record's hashes, or None.
    `exact`: the record's `exact_answers` (a format-1 record without the hashes of the
    text as shown): the answer must be the exact text, the prompt is not checked."""
    if exact:
        return ANSWER if answer_hash(answer) != s.answer_sha256 else None
    if shown_hash(answer) != s.shown_sha256:
        return ANSWER
    if shown_hash(prompt) != s.prompt_sha256:
        return PROMPT
    return None


def _refuse_changed(changed: list[tuple[str, str, str]], path: Path, key: str, old: bool,
                    against: str = "the one exported for it") -> None:
    if not changed:
        return
    where, unit, what = changed[0]
    more = f" ({len(changed) - 1} more row(s) changed, e.g. {changed[1][0]})" if len(changed) > 1 else ""
    hint = _RESTORE.format(what=what)
    if old and what == ANSWER:
        hint += ("; this sheet's record predates line-end-tolerant checks, so the answer must be exactly as "
                 "exported: export again if a spreadsheet rewrote it")
    raise DataError(f"{where}: the {what} of unit {unit!r} is not {against}{more}", file=str(path),
                    key=key, hint=hint)


def read_sheet(path: Path, limits: RuntimeLimits, key: str = "sheet") -> FilledSheet:
    """A filled sheet and its record, checked: every row's unit was sampled, appears once,
    and its label (blank: not annotated) is one of the allowed labels."""
    rec = read_record(path, key)
    sampled = {u.id: u for u in rec.units}
    out: dict[str, SheetLabel] = {}
    changed: list[tuple[str, str, str]] = []
    for where, row in _raw_rows(path, key, limits):
        unit = _text(row.get(UNIT), path, where, UNIT)
        if not unit:
            raise DataError(f"{where}: `{UNIT}` is blank", file=str(path), key=key,
                            hint="keep every row's unit_id as exported")
        if unit not in sampled:
            raise DataError(f"{where}: unit {unit!r} was not sampled for this sheet", file=str(path), key=key,
                            hint=f"keep the unit ids as exported (the sheet samples {len(sampled)} units of "
                                 f"run {rec.run_id}, layer {rec.layer!r})")
        if unit in out:
            raise DataError(f"{where}: unit {unit!r} appears twice (first on {out[unit].where})", file=str(path),
                            key=key, hint="keep one row per unit: delete the duplicate")
        answer = _shown(row, ANSWER, path, where, key)
        what = _changed(sampled[unit], answer, _shown(row, PROMPT, path, where, key), rec.exact_answers)
        if what is not None:
            changed.append((where, unit, what))
        label = _text(row.get(LABEL), path, where, LABEL)
        if label and label not in rec.labels:
            raise DataError(f"{where}: label {label!r} is not one of the allowed labels", file=str(path), key=key,
                            hint=f"use one of {', '.join(rec.labels)}, or leave it blank (not annotated)")
        out[unit] = SheetLabel(unit=unit, label=label or None, where=where,
                               note=_text(row.get("note"), path, where, "note"), answer=shown_text(answer))
    # every row checked before any is refused: the line names the first and counts the rest
    _refuse_changed(changed, path, key, old=rec.exact_answers)
    return FilledSheet(path=path, record=rec, rows=out)


def sheet_path(sheet: str, spec_file: str | None, key: str) -> Path:
    """The sheet a spec names, relative to the spec file."""
    p = Path(sheet).expanduser()
    if not p.is_absolute() and spec_file is not None:
        p = Path(spec_file).parent / p
    return resolved(p, key=key)


def check_keys(sheet: FilledSheet, keys: Mapping[str, str]) -> None:
    """Every sampled unit is a unit of this run (`keys`: unit id -> its request key) asking
    the same request: else the sheet was sampled from another run (another model, prompt,
    data or settings)."""
    hint = ("export a sheet from a run of this spec and model (`biasaudit annotate export RUN`), or point "
            "`sheet` at the sheet of this run")
    missing = [s for s in sheet.record.units if s.id not in keys]
    if missing:
        raise DataError(f"the sheet was sampled from another run: {len(missing)} of its units are not in this run "
                        f"(first: {missing[0].id!r}; sampled from run {sheet.record.run_id})", file=str(sheet.path),
                        key=UNIT, hint=hint)
    for s in sheet.record.units:
        if keys[s.id] != s.key:
            row = sheet.rows.get(s.id)
            where = f"{row.where}: " if row is not None else ""
            raise DataError(f"{where}the sheet was sampled from another run: unit {s.id!r} asks another request "
                            "here (the prompt, the model or its settings differ)", file=str(sheet.path), key=UNIT,
                            hint=hint)


def check_run(sheet: FilledSheet, units: Sequence[Unit], inputs: Mapping[str, str], cut_at: int) -> None:
    """`check_keys`; each sampled unit's answer in this run is the one the record hashed;
    and each row's answer is this run's answer, recomputed from the run, not taken from
    the record (a record edited with the sheet proves nothing). An input cut to `cut_at`
    characters is compared as far as it goes: the row's answer must begin with it."""
    check_keys(sheet, {u.id: u.key for u in units})
    for s in sheet.record.units:
        text = inputs.get(s.id)
        if text is not None and len(text) < cut_at and answer_hash(text) != s.answer_sha256:
            row = sheet.rows.get(s.id)
            where = f"{row.where}: " if row is not None else ""
            raise DataError(f"{where}the sheet was sampled from another run: unit {s.id!r} has another answer here",
                            file=str(sheet.path), key=UNIT,
                            hint="export a sheet from a run of this spec and model (`biasaudit annotate export RUN`)"
                                 "; if this is its run, the sheet's record was edited: export again")
    changed = []
    for row in sheet.rows.values():
        text = inputs.get(row.unit)
        if text is None:
            continue
        ran = shown_text(text)
        if not (row.answer == ran if len(text) < cut_at else row.answer.startswith(ran)):
            changed.append((row.where, row.unit, ANSWER))
    changed.sort(key=lambda c: int(c[0].split()[-1]))
    _refuse_changed(changed, sheet.path, UNIT, old=False, against="the answer this run gave it")


class SheetEvidence(CodeDetail):
    """Where a unit stands on an annotation sheet's sample, and the annotator's note: the
    evidence of a layer of human labels (`CoderDef.is_human`), which the gold report
    (coding/human_review.py) reads the sampling design from."""

    stratum: str | None = None
    """The stratum the unit belongs to on the annotation sheet's sampling design."""
    sampled: bool | None = None
    """The unit was drawn for human review."""
    sampled_from: str | None = None
    """The layer the sheet's sample was drawn from."""
    stratify: str | None = None
    """What the sample was stratified by (null: not stratified)."""
    chosen: bool | None = None
    """The unit was chosen by a reviewer in the viewer, not drawn at random (the sheet's
    `selection` is `chosen`): a convenience sample."""
    note: str | None = None
    """The annotator's note."""


__all__ = ["ALL", "ANSWER", "CODE_COLUMNS", "COLUMNS", "FORMAT", "FilledSheet", "LABEL", "PROMPT", "SampleRecord",
           "SheetEvidence",
           "SampledUnit", "SheetLabel", "UNIT", "answer_hash", "label_legend", "check_keys", "check_run", "read_record", "read_sheet",
           "record_path", "safe_cell", "sheet_path", "sheet_text", "shown_hash", "shown_text", "stratum_of",
           "unsafe_cell"]
