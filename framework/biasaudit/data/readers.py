"""Read csv / jsonl / JSON files into row dicts, with errors that name the file and line.

Reads are bounded (`runtime.limits.max_data_bytes`, `max_stimuli`): a data path may name
`/dev/zero`, a FIFO or a file larger than memory, and each is a one-line error. A file
whose name ends in `.gz` is decompressed as it is read (`read_data`), bounded by the same
limit on its decompressed size, so a few kilobytes of gzip cannot expand into gigabytes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from biasaudit._util.fileio import excerpt, open_input, read_capped
from biasaudit._util.trail import split_lines
from biasaudit.errors import DataError
from biasaudit.spec import RuntimeLimits

_DEFAULT = RuntimeLimits()
_SOURCE_HINT = "paths are relative to the spec file; check `stimuli.source`"


@dataclass(frozen=True)
class FileDigest:
    """A file's digests, computed in one pass: its SHA-256 and its git blob id (the SHA-1
    of `blob <size>\\0` + content, what a repository's tree records for it)."""

    sha256: str
    git_blob_sha1: str
    size: int


# A file's digests by (path, device, inode, size, mtime, ctime): a run hashes each data
# file once, however often it is loaded (validate, plan, the run, a re-render check);
# a rewrite changes the ctime, so an edited file is hashed again.
_DIGESTS: OrderedDict[tuple[str, int, int, int, int, int], FileDigest] = OrderedDict()
_DIGESTS_LOCK = threading.Lock()
_DIGESTS_MAX = 256
_CHUNK = 1 << 20


def hash_stream(f: IO[bytes], size: int) -> FileDigest:
    """Both digests of an open file, streamed in 1 MiB chunks (files may be large)."""
    sha, blob = hashlib.sha256(), hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)
    n = 0
    for chunk in iter(lambda: f.read(_CHUNK), b""):
        sha.update(chunk)
        blob.update(chunk)
        n += len(chunk)
    return FileDigest(sha256=sha.hexdigest(), git_blob_sha1=blob.hexdigest(), size=n)


def file_digest(path: Path, key: str | None = None) -> FileDigest:
    """The digests of a data file (a regular file; no FIFO, device or /proc file), from
    the process's cache when this version of the file was hashed before."""
    with open_input(path, sys.maxsize, key=key, what="data file", hint=_SOURCE_HINT if key else None) as f:
        st = os.fstat(f.fileno())
        k = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with _DIGESTS_LOCK:
            hit = _DIGESTS.get(k)
        if hit is not None:
            return hit
        d = hash_stream(f, st.st_size)
    if d.size != st.st_size:  # written to while it was read: neither digest is of one file
        raise DataError("the data file changed while it was read", file=str(path), key=key,
                        hint="run again once nothing writes to it")
    with _DIGESTS_LOCK:
        _DIGESTS[k] = d
        while len(_DIGESTS) > _DIGESTS_MAX:
            _DIGESTS.popitem(last=False)
    return d


def file_sha256(path: Path) -> str:
    return file_digest(path).sha256


def is_gzip_name(path: Path) -> bool:
    return path.name.lower().endswith(".gz")


def _gunzip_capped(f: IO[bytes], limit: int, path: Path, key: str) -> bytes:
    """The decompressed content of a gzip stream (several members, as `cat a.gz b.gz`
    makes, are read in turn), refused as soon as it passes `limit` bytes: zlib's
    `max_length` stops each step at the limit, so a bomb never expands in memory."""
    too_big = DataError(f"the data file decompresses to more than {limit} bytes", file=str(path), key=key,
                        hint="use a smaller file, or raise runtime.limits.max_data_bytes (it bounds the "
                             "decompressed size)")
    out = bytearray()
    dec = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer, nothing else
    pending, in_member = b"", False
    try:
        while True:
            if not pending:
                pending = f.read(1 << 16)
                if not pending:
                    break
            in_member = True
            out += dec.decompress(pending, limit + 1 - len(out))
            if len(out) > limit:
                raise too_big
            pending = dec.unconsumed_tail
            if dec.eof:  # one member ended: what follows is the next member
                pending, in_member = dec.unused_data, False
                dec = zlib.decompressobj(wbits=31)
    except zlib.error as exc:
        raise DataError(f"not readable as gzip ({exc})", file=str(path), key=key,
                        hint="a file named .gz must be gzip-compressed (gzip -t checks it); or rename it") from None
    if in_member:
        raise DataError("the gzip file is truncated", file=str(path), key=key,
                        hint="download or copy the file again")
    return bytes(out)


def read_data(path: Path, key: str, max_bytes: int = _DEFAULT.max_data_bytes) -> bytes:
    """The bytes of a data file, bounded by `max_bytes`; a `.gz` file decompressed, the
    bound applying to its decompressed size (and its stored size)."""
    if not is_gzip_name(path):
        return read_capped(path, max_bytes, key=key, what="data file", hint=_SOURCE_HINT)
    with open_input(path, max_bytes, key=key, what="data file", hint=_SOURCE_HINT) as f:
        return _gunzip_capped(f, max_bytes, path, key)


def read_text(path: Path, key: str, max_bytes: int = _DEFAULT.max_data_bytes) -> str:
    raw = read_data(path, key, max_bytes)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        gz = raw[:2] == b"\x1f\x8b"
        raise DataError(
            f"not UTF-8 text (invalid byte at offset {exc.start})",
            file=str(path),
            key=key,
            hint="this is gzip-compressed data: name the file *.gz and it is read as is" if gz else
            "re-save the file as UTF-8 (a spreadsheet or compressed file must be exported as csv first)",
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
    # a published file's records may hold U+2028 and other characters str.splitlines()
    # breaks at: split on "\n" only; the +1 lets _too_many say what is wrong
    for i, line in split_lines(text, file=str(path), key=key, max_lines=limits.max_stimuli + 1):
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
