"""Read csv / jsonl files into row dicts, with errors that name the file and line."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

from ..errors import DataError


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_text(path: Path, key: str) -> str:
    if not path.is_file():
        raise DataError(
            "data file not found",
            file=str(path),
            key=key,
            hint="paths are relative to the spec file; check `stimuli.source`",
        )
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"not UTF-8 text (invalid byte at offset {exc.start})",
            file=str(path),
            key=key,
            hint="re-save the file as UTF-8",
        ) from None


def read_csv(path: Path, key: str = "stimuli.source") -> tuple[list[str], list[dict[str, Any]]]:
    text = read_text(path, key)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise DataError(f"malformed csv: {exc}", file=str(path), key=key) from None
    if not rows:
        raise DataError("csv file is empty", file=str(path), key=key, hint="add a header row")
    header = rows[0]
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


def read_jsonl(path: Path, key: str = "stimuli.source") -> list[dict[str, Any]]:
    text = read_text(path, key)
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"line {i} is not valid JSON: {exc.msg}",
                file=str(path),
                key=key,
                hint="one JSON object per line",
            ) from None
        if not isinstance(obj, dict):
            raise DataError(f"line {i} is not a JSON object", file=str(path), key=key)
        out.append(obj)
    return out


def read_json_map(path: Path, key: str = "stimuli.source") -> list[dict[str, Any]]:
    """A JSON object of id -> record (the FiSCo raw.json shape) as rows with an `id`."""
    text = read_text(path, key)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON (line {exc.lineno}): {exc.msg}", file=str(path), key=key) from None
    if not isinstance(obj, dict) or not all(isinstance(v, dict) for v in obj.values()):
        raise DataError("expected a JSON object of id -> record", file=str(path), key=key)
    return [{"id": str(k), **v} for k, v in obj.items()]
