"""Read csv / jsonl files into row dicts, with errors that name the file and line.

Reads are bounded (`runtime.limits.max_data_bytes`, `max_stimuli`): a data path may name
`/dev/zero`, a FIFO or a file larger than memory, and each is a one-line error.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biasaudit._util.fileio import excerpt, open_input, read_capped
from biasaudit.errors import DataError
from biasaudit.spec import RuntimeLimits

_DEFAULT = RuntimeLimits()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open_input(path, sys.maxsize, what="data file") as f:  # checked again: no FIFO, device or /proc file
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_text(path: Path, key: str, max_bytes: int = _DEFAULT.max_data_bytes) -> str:
    raw = read_capped(path, max_bytes, key=key, what="data file",
                      hint="paths are relative to the spec file; check `stimuli.source`")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"not UTF-8 text (invalid byte at offset {exc.start})",
            file=str(path),
            key=key,
            hint="re-save the file as UTF-8 (a spreadsheet or compressed file must be exported as csv first)",
        ) from None


def _too_many(path: Path, key: str, limit: int) -> DataError:
    return DataError(f"more than {limit} rows", file=str(path), key=key,
                     hint="sample the data (stimuli.sample) after splitting the file, or raise "
                          "runtime.limits.max_stimuli")


def read_csv(path: Path, key: str = "stimuli.source", limits: RuntimeLimits = _DEFAULT
             ) -> tuple[list[str], list[dict[str, Any]]]:
    text = read_text(path, key, limits.max_data_bytes)
    reader = csv.reader(io.StringIO(text, newline=""))
    rows = []
    try:
        for row in reader:
            rows.append(row)
            if len(rows) > limits.max_stimuli + 1:
                raise _too_many(path, key, limits.max_stimuli)
    except csv.Error as exc:
        raise DataError(f"malformed csv (line {reader.line_num}): {exc}", file=str(path), key=key,
                        hint="check quoting near that line") from None
    if not rows:
        raise DataError("csv file is empty", file=str(path), key=key, hint="add a header row")
    header = rows[0]
    seen: set[str] = set()
    for col in header:
        if col in seen:
            raise DataError(f"column {col!r} appears twice in the header", file=str(path), key=key,
                            hint="rename one of them: a row would keep only the last value")
        seen.add(col)
    out = []
    for i, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(header):
            raise DataError(
                f"line {i} has {len(row)} fields, the header has {len(header)}",
                file=str(path),
                key=key,
                hint="quote fields that contain commas",
            )
        out.append(dict(zip(header, row, strict=True)))
    return header, out


def _json(text: str, path: Path, key: str, where: str) -> Any:
    """json.loads with every way a hostile document fails as a DataError: syntax,
    nesting deeper than Python's recursion limit, integers too long to convert, and
    lone surrogate escapes (`\\ud800`, which no file, store or report can encode)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where} is not valid JSON: {exc.msg}", file=str(path), key=key,
                        hint="one JSON object per line" if where.startswith("line") else "check the file") from None
    except RecursionError:
        raise DataError(f"{where} is nested too deeply", file=str(path), key=key, hint="flatten the record") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise DataError(f"{where}: {excerpt(str(exc), 120)}", file=str(path), key=key, hint="check the values") from None
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise DataError(f"{where} holds an unpaired surrogate escape (e.g. \\ud800)", file=str(path), key=key,
                        hint="fix the text encoding of that record") from None
    except (RecursionError, ValueError):
        raise DataError(f"{where} is nested too deeply", file=str(path), key=key, hint="flatten the record") from None
    return obj


def read_jsonl(path: Path, key: str = "stimuli.source", limits: RuntimeLimits = _DEFAULT,
               lines: list[int] | None = None) -> list[dict[str, Any]]:
    """The file's records; `lines`, when given, gets each record's line number (blank
    lines are skipped, so a record's index is not its line)."""
    text = read_text(path, key, limits.max_data_bytes)
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        obj = _json(line, path, key, f"line {i}")
        if not isinstance(obj, dict):
            raise DataError(f"line {i} is not a JSON object", file=str(path), key=key,
                            hint="one JSON object per line")
        out.append(obj)
        if lines is not None:
            lines.append(i)
        if len(out) > limits.max_stimuli:
            raise _too_many(path, key, limits.max_stimuli)
    return out


def read_json_rows(path: Path, rows: Callable[[Any], list[dict[str, Any]]], key: str = "stimuli.source",
                   limits: RuntimeLimits = _DEFAULT) -> list[dict[str, Any]]:
    """One JSON document, its records picked out by a format's `rows` function (a
    published file that nests its items, such as StereoSet's dev.json)."""
    text = read_text(path, key, limits.max_data_bytes)
    obj = _json(text, path, key, "the file")
    try:
        out = rows(obj)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(f"not in the expected layout: {excerpt(str(exc), 200)}", file=str(path), key=key,
                        hint="use the published file unchanged") from None
    if len(out) > limits.max_stimuli:
        raise _too_many(path, key, limits.max_stimuli)
    return out


def read_json_map(path: Path, key: str = "stimuli.source", limits: RuntimeLimits = _DEFAULT) -> list[dict[str, Any]]:
    """A JSON object of id -> record (the FiSCo raw.json shape) as rows with an `id`."""
    text = read_text(path, key, limits.max_data_bytes)
    obj = _json(text, path, key, "the file")
    if not isinstance(obj, dict) or not all(isinstance(v, dict) for v in obj.values()):
        raise DataError("expected a JSON object of id -> record", file=str(path), key=key,
                        hint="e.g. {\"1\": {\"question\": ...}, ...}")
    if len(obj) > limits.max_stimuli:
        raise _too_many(path, key, limits.max_stimuli)
    return [{"id": str(k), **v} for k, v in obj.items()]
