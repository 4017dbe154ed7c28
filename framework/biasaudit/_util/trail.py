"""JSON lines: the one writer and the one reader of every line-oriented file biasaudit
writes or reads (responses.jsonl, codes.jsonl, an evidence pack's trail/ and store/, a
jsonl annotation sheet, the sweep's job ledger, JSONL stimulus files, replayed
recordings).

A record is one line, a line ends at "\\n" and nowhere else. A model chooses its answers,
so an answer may hold every character Unicode calls a line break: "\\r", "\\x0b",
"\\x0c", "\\x1c"-"\\x1e", U+0085, U+2028, U+2029 (and NUL). `str.splitlines()` (and text
mode's universal newlines) breaks at all of them, so a reader built on it splits a
record in two and the run is kept out of its own evidence tools. Hence:

- `json_line` writes JSON with `ensure_ascii=False` (a run's files stay byte-identical to
  those earlier versions wrote, so packed hashes and byte comparisons still hold), plus
  U+0085, U+2028, U+2029 and unpaired surrogates escaped as six-character `\\u` escapes (e.g. `\\u2028`). JSON already
  escapes every C0 control, so a written line holds no character any line splitter
  breaks at, and old readers (`splitlines`) read new files too. An unpaired surrogate
  (a JSON answer may carry `"\\ud800"`) cannot be encoded as UTF-8: escaped, it
  round-trips to the same string instead of failing the write.
- `split_lines` / `json_records` split on b"\\n" only (a "\\r" before it is JSON
  whitespace), so files written by earlier versions with raw U+2028 read too. Untrusted
  input is bounded: the most bytes a line may have and the most lines, each refused as
  one line naming the file and line number.
- A trail biasaudit writes for later reading (responses.jsonl, codes.jsonl, the job
  ledger) begins with one header record, `{"biasaudit_trail": <kind>, "format_version":
  N}` (`header`), rather than a version on every line (at 80,200 requests a run's trail
  is counted in bytes per request, issue 42). Given the kind, the readers check the
  header's version (`records.upgrade`: a newer one is refused as one line), strip it and
  upgrade each line from the file's version; a file without a header is version 1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from biasaudit._util.fileio import atomic_binary, open_append, write_error
from biasaudit.errors import BiasAuditError, DataError
from biasaudit.records import upgrade

# Characters json.dumps(ensure_ascii=False) leaves raw that a line splitter breaks at
# (U+0085, U+2028, U+2029), and unpaired surrogates (no UTF-8 encoding exists for them).
_RAW = re.compile("[\x85\u2028\u2029\ud800-\udfff]")
MAX_LINE_BYTES = 64 * 2**20
"""The longest line the readers take by default (one answer, with its request)."""


HEADER_KEY = "biasaudit_trail"
"""The key only a trail's header record has: its value is the file's kind."""


def header(kind: str) -> dict[str, object]:
    """The header record of a trail of `kind` written by this biasaudit."""
    return {HEADER_KEY: kind, upgrade.VERSION_KEY: upgrade.current(kind)}


def is_header(obj: object) -> bool:
    return isinstance(obj, dict) and HEADER_KEY in obj


def header_version(obj: dict[str, Any], kind: str, *, file: str, error: type[BiasAuditError] = DataError) -> int:
    """The version a header record gives, checked: its kind is `kind`, its version an
    integer this biasaudit reads (`records.upgrade.check_readable`)."""
    if obj.get(HEADER_KEY) != kind:
        raise error(f"line 1 is the header of a {str(obj.get(HEADER_KEY))[:40]!r} trail, not of {kind}", file=file,
                    key=HEADER_KEY, hint=f"give the {kind} file")
    v = obj.get(upgrade.VERSION_KEY)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise error("the header's format_version is not a positive integer", file=file, key=upgrade.VERSION_KEY,
                    hint="a trail biasaudit did not write, or an edited one")
    upgrade.check_readable(kind, v, file=file)
    return v


def split_header(data: bytes) -> tuple[dict[str, Any] | None, bytes]:
    """A trail's header record (None: a version-1 file, which has none) and the bytes of
    its records after it, as written (an evidence pack compares those bytes)."""
    first, sep, rest = data.partition(b"\n")
    if HEADER_KEY.encode() not in first:
        return None, data
    try:
        obj = json.loads(first.decode("utf-8"))
    except (ValueError, RecursionError):
        return None, data
    return (obj, rest) if is_header(obj) else (None, data)


def _escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


_ENCODERS = {keys: json.JSONEncoder(ensure_ascii=False, sort_keys=keys) for keys in (False, True)}
"""The encoders `json.dumps(obj, ensure_ascii=False, sort_keys=...)` would build for each
record (the same text): built once, not once per line of a million-line trail."""


def _safe(text: str) -> str:
    """`text` with the characters a line splitter breaks at escaped (`_RAW`). An ASCII
    text holds none of them, and `str.isascii` is a flag CPython keeps on each string:
    most lines of a trail skip the scan."""
    return text if text.isascii() else _RAW.sub(_escape, text)


def json_line(obj: Any, *, sort_keys: bool = False, default: Callable[[Any], Any] | None = None) -> str:
    """One record as one JSON line, "\\n" included; it holds no other line break."""
    text = (json.dumps(obj, ensure_ascii=False, sort_keys=sort_keys, default=default) if default is not None
            else _ENCODERS[bool(sort_keys)].encode(obj))
    return _safe(text) + "\n"


def encode(obj: Any) -> str:
    """One value as JSON text, as `json_line` writes it inside a line (no line break
    added, none escaped yet): a fragment a writer encodes once and reuses in many lines
    (`write_encoded_lines` escapes the lines it writes)."""
    return _ENCODERS[False].encode(obj)


def json_lines(rows: Iterable[Any], *, sort_keys: bool = False,
               default: Callable[[Any], Any] | None = None) -> str:
    """The records as JSON lines (a whole file's text)."""
    return "".join(json_line(r, sort_keys=sort_keys, default=default) for r in rows)


CHUNK_LINES = 2048
"""Lines a trail writer joins into one write (a few MB at most for ordinary records):
one `write` and one UTF-8 encoding per chunk instead of per line, never the whole file."""


def write_json_lines(path: Path, rows: Iterable[Any], *, sort_keys: bool = False, kind: str | None = None) -> None:
    """A JSON-lines file written whole or not at all (a temporary file, then a rename),
    in chunks of `CHUNK_LINES` records, so a long trail is never held in memory as one
    string. With `kind`, the trail's header record first."""
    enc = _ENCODERS[bool(sort_keys)].encode
    write_encoded_lines(path, (enc(r) for r in rows), kind=kind)


def write_encoded_lines(path: Path, lines: Iterable[str], *, kind: str | None = None) -> None:
    """`write_json_lines` for records already encoded as JSON text (one per item of
    `lines`, without its "\\n"; e.g. joined from `encode`d fragments): each is escaped
    as `json_line` escapes (no character a line splitter breaks at) and ended by "\\n".
    Written whole or not at all, `CHUNK_LINES` lines per write."""
    try:
        with atomic_binary(path) as f:
            if kind is not None:
                f.write(json_line(header(kind)).encode("utf-8"))
            buf: list[str] = []
            for line in lines:
                buf.append(line)
                if len(buf) >= CHUNK_LINES:
                    f.write(_chunk(buf))
                    buf.clear()
            if buf:
                f.write(_chunk(buf))
    except OSError as exc:  # atomic_binary names the file for its own errors; a write raises here
        raise write_error(path, exc) from None


def _chunk(lines: list[str]) -> bytes:
    # the escapes match no "\n", so escaping the joined text equals escaping each line
    return _safe("\n".join(lines) + "\n").encode("utf-8")


def append_json_line(path: Path | str, obj: Any, *, key: str, what: str) -> None:
    """Append one record (one short write in append mode: lines from parallel writers do
    not interleave), through the one writer's `open_append` (no link followed)."""
    with open_append(path, key=key, what=what) as f:
        f.write(json_line(obj))


def split_lines(data: bytes | str, *, file: str, error: type[BiasAuditError] = DataError, key: str | None = None,
                hint: str | None = None, max_line: int = MAX_LINE_BYTES,
                max_lines: int | None = None) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line of `data`, split on "\\n" only. Bytes are
    decoded as UTF-8 per line (a bad byte is an error naming its line). A line longer than
    `max_line` bytes (characters for `str` input), or more than `max_lines` non-blank
    lines, is one error naming the file."""
    parts: list[bytes | str] = [*data.split(b"\n")] if isinstance(data, bytes) else [*data.split("\n")]
    n = 0
    for i, raw in enumerate(parts, start=1):
        if len(raw) > max_line:
            raise error(f"line {i} is longer than {max_line} bytes", file=file, key=key,
                        hint=hint or "one JSON record per line")
        if isinstance(raw, str):
            line = raw
        else:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(f"line {i} is not UTF-8 text (invalid byte at column {exc.start + 1})", file=file,
                            key=key, hint=hint or "save the file as UTF-8") from None
        if not line.strip():
            continue
        n += 1
        if max_lines is not None and n > max_lines:
            raise error(f"more than {max_lines} lines", file=file, key=key, hint=hint or "use a smaller file")
        yield i, line


def parse_line(line: str, where: str, *, file: str, error: type[BiasAuditError] = DataError,
               key: str | None = None, hint: str | None = None) -> Any:
    """One line's JSON value; every way a hostile line fails (syntax, nesting deeper than
    the recursion limit, an integer too long to convert) is one error naming it."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise error(f"{where} is not valid JSON: {exc.msg} (column {exc.colno})", file=file, key=key,
                    hint=hint or "one JSON object per line") from None
    except RecursionError:
        raise error(f"{where} is nested too deeply", file=file, key=key, hint=hint or "flatten the record") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise error(f"{where}: {str(exc)[:120]}", file=file, key=key, hint=hint or "check the values") from None


def json_records(data: bytes | str, *, file: str, error: type[BiasAuditError] = DataError, key: str | None = None,
                 hint: str | None = None, max_line: int = MAX_LINE_BYTES, max_lines: int | None = None,
                 objects: bool = True, kind: str | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, record) of each non-blank line; with `objects`, a line that is not a
    JSON object is an error too. With `kind` (a trail biasaudit wrote), the header is
    checked and left out, and each record is upgraded from the file's version to today's."""
    version: int | None = None
    for i, line in split_lines(data, file=file, error=error, key=key, hint=hint, max_line=max_line,
                               max_lines=max_lines):
        obj = parse_line(line, f"line {i}", file=file, error=error, key=key, hint=hint)
        if objects and not isinstance(obj, dict):
            raise error(f"line {i} is not a JSON object", file=file, key=key, hint=hint or "one JSON object per line")
        if kind is not None and isinstance(obj, dict):
            if version is None:
                version = header_version(obj, kind, file=file, error=error) if is_header(obj) else 1
                if is_header(obj):
                    continue
            elif is_header(obj):
                raise error(f"line {i} is a header record, but only line 1 may be", file=file, key=key,
                            hint="a trail biasaudit did not write, or files joined together")
            obj = upgrade.upgrade(kind, obj, file=file, version=version)[0]
        yield i, obj


def count_lines(f: IO[bytes]) -> int:
    """The records of an open JSON-lines file, counted by its "\\n" (a header not counted),
    read a block at a time."""
    n, first = 0, True
    while chunk := f.read(2**20):
        n += chunk.count(b"\n")
        if first and split_header(chunk)[0] is not None:
            n -= 1
        first = False
    return n


def stream_records(f: IO[bytes], skipped: list[int], *, max_line: int = MAX_LINE_BYTES,
                   kind: str | None = None, file: str = "") -> Iterator[dict[str, Any]]:
    """The JSON objects of an open JSON-lines file, one at a time, never more than one
    line in memory (the viewer's large trails). Lenient: a line longer than `max_line`,
    not UTF-8, not JSON or not an object is skipped and counted in `skipped[0]`.
    (`readline` of a binary file splits on b"\\n" only.) A trail's header is left out
    (with `kind`: checked, and each record upgraded from the file's version)."""
    version: int | None = None
    while True:
        line = f.readline(max_line + 1)
        if not line:
            return
        if len(line) > max_line and not line.endswith(b"\n"):
            skipped[0] += 1
            while (rest := f.readline(max_line)) and not rest.endswith(b"\n"):
                pass
            continue
        if not line.strip():
            continue
        try:
            obj = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            skipped[0] += 1
            continue
        if not isinstance(obj, dict):
            skipped[0] += 1
        elif is_header(obj):
            if kind is not None and version is None:
                version = header_version(obj, kind, file=file)
        elif kind is not None:
            version = 1 if version is None else version
            yield upgrade.upgrade(kind, obj, file=file, version=version)[0]
        else:
            yield obj


__all__ = ["CHUNK_LINES", "HEADER_KEY", "MAX_LINE_BYTES", "append_json_line", "count_lines", "encode", "header",
           "header_version", "is_header", "split_header", "json_line", "json_lines", "json_records", "parse_line",
           "split_lines", "stream_records", "write_encoded_lines", "write_json_lines"]
