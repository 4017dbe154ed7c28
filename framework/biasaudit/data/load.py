"""Load the stimuli a spec names: file or inline, adapter, field mapping, seeded sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from biasaudit._util.fileio import excerpt, names_excerpt, resolved
from biasaudit.data.adapters import ADAPTERS, Adapter, check_columns
from biasaudit.data.provenance import check as check_provenance
from biasaudit.data.readers import file_sha256, read_csv, read_json_map, read_json_rows, read_jsonl
from biasaudit.data.records import Stimulus, StimulusSet
from biasaudit.errors import DataError
from biasaudit.records.manifest import DataSample
from biasaudit.spec import RuntimeLimits, StimuliSpec


def resolve_source(spec: StimuliSpec, spec_file: Path | None, key: str = "stimuli.source") -> Path | None:
    """The data file a spec names (relative to the spec file), symlinks resolved; it is
    read as an untrusted input file (`fileio.read_capped`)."""
    if spec.source is None:
        return None
    p = Path(spec.source).expanduser()
    if not p.is_absolute() and spec_file is not None:
        p = spec_file.parent / p
    return resolved(p, key=key)


def _read_rows(
    spec: StimuliSpec, adapter: Adapter, path: Path | None, file: str | None, limits: RuntimeLimits,
    line_numbers: list[int],
) -> tuple[list[str], list[dict[str, Any]]]:
    """The rows and header of the spec's data: generated, inline, or read with the adapter's reader."""
    if spec.generate is not None:
        rows: list[dict[str, Any]] = generate_rows(spec, file, limits.max_stimuli)
        header = sorted({k for r in rows for k in r})
    elif path is None:
        rows = [dict(r) for r in (spec.inline or [])]
        header = sorted({k for r in rows for k in r})
    elif adapter.reader == "csv":
        header, rows = read_csv(path, limits=limits)
    elif adapter.reader == "json" and adapter.rows is not None:
        rows = read_json_rows(path, adapter.rows, limits=limits)
        header = sorted({k for r in rows for k in r})
    elif adapter.reader == "json_map":
        rows = read_json_map(path, limits=limits)
        header = sorted({k for r in rows for k in r})
    else:
        rows = read_jsonl(path, limits=limits, lines=line_numbers)
        header = sorted({k for r in rows for k in r})
    return header, rows


def _map_fields(spec: StimuliSpec, row: dict[str, Any], i: int, header: list[str], where: str) -> dict[str, Any]:
    mapped = dict(row)
    for canonical, column in spec.fields.items():
        if column not in row:
            raise DataError(
                f"column {column!r} (mapped to field {canonical!r}) is missing in row {i}",
                file=where,
                key=f"stimuli.fields.{canonical}",
                hint=f"columns: {names_excerpt(header)}",
            )
        mapped[canonical] = row[column]
    return mapped


def _to_stimulus(
    spec: StimuliSpec, adapter: Adapter, row: dict[str, Any], i: int, header: list[str], where: str,
    line_numbers: list[int],
) -> Stimulus:
    def record(i: int) -> str:
        return f"line {line_numbers[i]}" if line_numbers else f"row {i}"

    mapped = _map_fields(spec, row, i, header, where)
    try:
        fields = adapter.convert(mapped)
    except (ValueError, KeyError, TypeError) as exc:  # TypeError: a null or a list where a value belongs
        raise DataError(f"{record(i)}: {excerpt(str(exc), 160)}", file=where, key="stimuli",
                        hint=f"fix that record, or use the published {spec.format} file unchanged") from None
    if spec.id_field is None and adapter.row_id is not None:
        try:
            sid = adapter.row_id(row)
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{record(i)}: no id: {excerpt(str(exc), 160)}", file=where, key="stimuli",
                            hint="fix that record, or name an id column with stimuli.id_field") from None
    else:
        sid = _row_id(spec, adapter.id_column, row, i, where)
    return Stimulus(id=sid, fields=fields)


def _check_stimuli(stimuli: list[Stimulus], where: str) -> None:
    ids = [s.id for s in stimuli]
    if len(set(ids)) != len(ids):
        raise DataError(
            "stimulus ids are not unique", file=where, key="stimuli.id_field",
            hint="choose a unique id column or drop id_field to use row numbers",
        )
    if not stimuli:
        raise DataError(
            "no stimuli to run", file=where, key="stimuli", hint="the data is empty"
        )


def _select(spec: StimuliSpec, stimuli: list[Stimulus], where: str) -> tuple[list[Stimulus], int, DataSample | None]:
    """The stimuli `where` keeps, then the seeded sample of them; with how many `where`
    kept and the sample as drawn."""
    if spec.where:
        stimuli = filter_stimuli(stimuli, spec.where, where)
    selected = len(stimuli)
    sample = None
    if spec.sample is not None:
        drawn = spec.sample.n < selected
        sample = DataSample(n=spec.sample.n, of=selected, seed=spec.sample.seed, drawn=drawn)
        if drawn:
            rng = np.random.default_rng(spec.sample.seed)
            keep = sorted(rng.choice(selected, size=spec.sample.n, replace=False).tolist())
            stimuli = [stimuli[i] for i in keep]
    return stimuli, selected, sample


def load_stimuli(spec: StimuliSpec, spec_file: Path | None, limits: RuntimeLimits | None = None) -> StimulusSet:
    limits = limits or RuntimeLimits()
    file = str(spec_file) if spec_file else None
    adapter = ADAPTERS.get(spec.format, file=file, key="stimuli.format")
    path = resolve_source(spec, spec_file)
    where = str(path) if path else file
    # a published file is checked against its provenance before a byte of it is parsed
    checked = check_provenance(path) if path else None
    line_numbers: list[int] = []  # a jsonl record's line in the file, for errors
    header, rows = _read_rows(spec, adapter, path, file, limits, line_numbers)
    check_columns(adapter, header, str(where), spec.format)
    stimuli = [_to_stimulus(spec, adapter, row, i, header, str(where), line_numbers) for i, row in enumerate(rows)]
    _check_stimuli(stimuli, str(where))
    n_total = len(stimuli)
    stimuli, selected, sample = _select(spec, stimuli, str(where))
    return StimulusSet(
        stimuli=stimuli,
        source=str(path) if path else None,
        sha256=(checked[1].sha256 if checked else file_sha256(path)) if path else None,
        format=spec.format,
        n_total=n_total,
        selected=selected,
        sample=sample,
        provenance=checked[0] if checked else None,
    )


def filter_stimuli(stimuli: list[Stimulus], where: dict[str, list[Any]], file: str) -> list[Stimulus]:
    """The stimuli whose fields match every `where` entry; an empty result is an error."""
    fields = sorted({k for s in stimuli for k in s.fields})
    for name in where:
        if name not in fields:
            raise DataError(f"`where` names field {name!r}, which the stimuli do not have", file=file,
                            key=f"stimuli.where.{name}", hint=f"fields: {names_excerpt(fields)}")
    wanted = {name: {str(v) for v in values} for name, values in where.items()}
    kept = [s for s in stimuli if all(str(s.fields.get(n)) in vals for n, vals in wanted.items())]
    if not kept:
        name = next(iter(where))
        present = sorted({str(s.fields.get(name)) for s in stimuli})
        shown = names_excerpt(present)
        raise DataError(f"no stimuli left after `where` ({len(stimuli)} before)", file=file,
                        key=f"stimuli.where.{name}", hint=f"values of {name} in the data: {shown}")
    return kept


def generate_rows(spec: StimuliSpec, file: str | None, max_rows: int | None = None) -> list[dict[str, Any]]:
    """One row per combination of the generator's value lists, fields rendered by Jinja.
    A mapping value contributes its keys as `<var>.<key>` (and `<var>` is the mapping)."""
    import itertools

    from biasaudit.spec.templates import check_variables, render

    gen = spec.generate
    assert gen is not None
    names = list(gen.vars)
    total = 1
    for name, values in gen.vars.items():
        if not values:
            raise DataError(f"generator list {name!r} is empty", file=file, key=f"stimuli.generate.vars.{name}")
        total *= len(values)
    limit = max_rows if max_rows is not None else RuntimeLimits().max_stimuli
    if total > limit:  # counted before generating anything
        raise DataError(f"the generator makes {total} rows, over the limit of {limit}", file=file,
                        key="stimuli.generate.vars", hint="use fewer values, or raise runtime.limits.max_stimuli")
    for fname, tmpl in gen.fields.items():
        check_variables(tmpl, set(names), file=file, key=f"stimuli.generate.fields.{fname}")
    rows = []
    for combo in itertools.product(*(gen.vars[n] for n in names)):
        ctx = dict(zip(names, combo, strict=True))
        row = {fname: render(t, ctx, file=file, key=f"stimuli.generate.fields.{fname}")
               for fname, t in gen.fields.items()}
        for n, v in ctx.items():
            if isinstance(v, dict):
                for k, x in v.items():
                    row[f"{n}.{k}"] = x
            else:
                row[n] = v
        rows.append(row)
    return rows


def _row_id(spec: StimuliSpec, default_col: str | None, row: dict[str, Any], i: int, where: str) -> str:
    col = spec.id_field if spec.id_field is not None else default_col
    if col is not None and col in row and str(row[col]).strip() != "":
        return str(row[col]).strip()
    if spec.id_field is not None:
        raise DataError(
            f"id column {spec.id_field!r} is missing or empty in row {i}",
            file=where, key="stimuli.id_field",
        )
    return str(i)
