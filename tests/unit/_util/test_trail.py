"""_util/trail.py, the one JSON-lines writer and reader: a line ends at "\\n" only, what
it writes holds no other line break, what earlier versions wrote reads back the same,
and a hostile file is refused as one line naming it and the line."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from biasaudit._util.trail import (
    json_line,
    json_lines,
    json_records,
    split_lines,
    stream_records,
    write_json_lines,
)
from biasaudit.errors import DataError, StoreError

# every separator of str.splitlines(), NUL and an unpaired surrogate
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00\ud800"


def test_a_line_holds_no_line_break_and_round_trips() -> None:
    rec = {"text": "a".join(BREAKS), "n": 1}
    line = json_line(rec)
    assert line.endswith("\n") and line.count("\n") == 1 and len(line.splitlines()) == 1
    assert line.encode("utf-8")  # the surrogate is escaped: encodable
    assert json.loads(line) == rec
    assert [r for _, r in json_records(json_lines([rec, rec]).encode("utf-8"), file="f")] == [rec, rec]


def test_ordinary_text_is_byte_identical_to_what_earlier_versions_wrote() -> None:
    # earlier versions: json.dumps(ensure_ascii=False) + "\n"; packs hash and compare these bytes
    rec = {"text": "Grüße, 東京, \U0001F600, tab\there, \"quoted\"", "x": [1.5, None, True]}
    assert json_line(rec) == json.dumps(rec, ensure_ascii=False) + "\n"
    assert json_line(rec, sort_keys=True) == json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n"


def test_files_earlier_versions_wrote_with_raw_separators_read() -> None:
    old = "".join(json.dumps({"t": f"x{c}y"}, ensure_ascii=False) + "\n" for c in "\x85\u2028\u2029")
    assert [r["t"] for _, r in json_records(old.encode("utf-8"), file="old.jsonl")] == \
        ["x\x85y", "x\u2028y", "x\u2029y"]
    # a CRLF file reads too ("\r" before "\n" is JSON whitespace); blank lines are skipped
    crlf = b'{"a": 1}\r\n\r\n{"a": 2}\r\n'
    assert list(json_records(crlf, file="f")) == [(1, {"a": 1}), (3, {"a": 2})]


@pytest.mark.parametrize(("data", "kw", "says"), [
    (b'{"a": 1}\n{"a": \n', {}, "line 2 is not valid JSON"),
    (b'{"a": 1}\n[1]\n', {}, "line 2 is not a JSON object"),
    (b'{"a": 1}\n{"a": "\xff"}\n', {}, "line 2 is not UTF-8 text"),
    (b'{"a": 1}\n{"a": "' + b"x" * 100 + b'"}\n', {"max_line": 50}, "line 2 is longer than 50 bytes"),
    (b'{"a": 1}\n' * 4, {"max_lines": 3}, "more than 3 lines"),
    (b"[" * 100_000 + b"\n", {"objects": False}, "line 1 is nested too deeply"),
    (b'{"a": ' + b"9" * 5000 + b"}\n", {}, "line 1: Exceeds the limit"),
])
def test_a_hostile_file_is_one_error_naming_the_file_and_line(data: bytes, kw: dict[str, int], says: str) -> None:
    with pytest.raises(StoreError) as exc:
        list(json_records(data, file="trail.jsonl", error=StoreError, **kw))
    line = exc.value.one_line()
    assert "\n" not in line and line.startswith("error: trail.jsonl: ") and says in line, line


def test_split_lines_of_text_splits_on_newline_only() -> None:
    text = "a\u2028b\n\nc\rd\n"
    assert list(split_lines(text, file="f")) == [(1, "a\u2028b"), (3, "c\rd")]
    with pytest.raises(DataError, match="line 1 is longer than 2"):
        list(split_lines("abc\n", file="f", max_line=2))


def test_stream_records_skips_and_counts_what_it_cannot_read() -> None:
    good = json_line({"t": "a\u2028b"}).encode("utf-8")
    data = good + b"not json\n" + b"[1]\n" + b'{"t": "' + b"x" * 200 + b'"}\n' + b"\xff\n" + b"\n" + good
    skipped = [0]
    got = list(stream_records(io.BytesIO(data), skipped, max_line=100))
    assert got == [{"t": "a\u2028b"}] * 2 and skipped == [4]


def test_write_json_lines_is_whole_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_json_lines(path, [{"t": "\u2028"}, {"t": 2}])
    assert path.read_bytes() == b'{"t": "\\u2028"}\n{"t": 2}\n'

    def rows() -> Iterator[dict[str, int]]:
        yield {"t": 3}
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError):
        write_json_lines(path, rows())
    assert path.read_bytes() == b'{"t": "\\u2028"}\n{"t": 2}\n' and sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]
