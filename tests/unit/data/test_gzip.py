"""`.csv.gz`, `.jsonl.gz` and `.json.gz` stimuli are read directly, bounded by
runtime.limits.max_data_bytes on the decompressed size (issue 37, section 1)."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

from biasaudit.data import load_stimuli
from biasaudit.errors import DataError
from biasaudit.spec import RuntimeLimits, StimuliSpec
from tests.unit.data._fixtures import crows_csv, file_entry, provenance, write_folder

REPO = Path(__file__).resolve().parents[3]


def _load(path: Path, fmt: str, limit: int | None = None):  # type: ignore[no-untyped-def]
    limits = RuntimeLimits(max_data_bytes=limit) if limit else None
    return load_stimuli(StimuliSpec(source=str(path), format=fmt), None, limits)


@pytest.mark.parametrize(("fmt", "name", "make"), [
    ("crows_pairs", "pairs.csv", lambda: crows_csv(9)),
    ("jsonl", "rows.jsonl", lambda: b"".join(json.dumps({"id": i, "text": f"t{i}"}).encode() + b"\n"
                                            for i in range(7))),
    ("stereoset", "dev.json", lambda: (REPO / "specs" / "data" / "stereoset_sample.json").read_bytes()),
])
def test_gzip_reads_the_same_stimuli(tmp_path: Path, fmt: str, name: str, make) -> None:  # type: ignore[no-untyped-def]
    """Before: a .gz file was read as text and refused (`not UTF-8 text`)."""
    raw = make()
    (tmp_path / name).write_bytes(raw)
    (tmp_path / f"{name}.gz").write_bytes(gzip.compress(raw))
    plain, packed = _load(tmp_path / name, fmt), _load(tmp_path / f"{name}.gz", fmt)
    assert packed.stimuli == plain.stimuli and len(plain.stimuli) > 0
    assert packed.sha256 == __import__("hashlib").sha256((tmp_path / f"{name}.gz").read_bytes()).hexdigest()


def test_a_gzip_bomb_is_refused_without_expanding(tmp_path: Path) -> None:
    """64 MiB of zeros in about 64 KiB of gzip, under a 1 MiB limit: refused, and memory
    never holds much more than the limit (zlib stops each step at it)."""
    bomb = tmp_path / "bomb.csv.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(crows_csv(1))
        for _ in range(64):
            f.write(b"\0" * 2**20)
    assert bomb.stat().st_size < 2**20 < 64 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(DataError) as ei:
            _load(bomb, "crows_pairs", limit=2**20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    line = ei.value.one_line()
    assert "decompresses to more than 1048576 bytes" in line and str(bomb) in line and "max_data_bytes" in line
    assert peak < 8 * 2**20, peak


def test_the_limit_is_on_the_decompressed_size_exactly(tmp_path: Path) -> None:
    raw = crows_csv(40)
    f = tmp_path / "pairs.csv.gz"
    f.write_bytes(gzip.compress(raw))
    assert len(_load(f, "crows_pairs", limit=len(raw)).stimuli) == 40
    with pytest.raises(DataError, match="decompresses to more than"):
        _load(f, "crows_pairs", limit=len(raw) - 1)


def test_concatenated_gzip_members_are_read_in_turn(tmp_path: Path) -> None:
    raw = crows_csv(10)
    head, tail = raw[:100], raw[100:]
    f = tmp_path / "pairs.csv.gz"
    f.write_bytes(gzip.compress(head) + gzip.compress(tail))  # what `cat a.gz b.gz` makes; gzip -d reads both
    assert len(_load(f, "crows_pairs").stimuli) == 10


@pytest.mark.parametrize(("content", "words"), [
    (lambda raw: gzip.compress(raw)[:-12], "truncated"),
    (lambda raw: raw, "not readable as gzip"),
])
def test_a_broken_gzip_is_one_line(tmp_path: Path, content, words: str) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "pairs.csv.gz"
    f.write_bytes(content(crows_csv(30)))
    with pytest.raises(DataError) as ei:
        _load(f, "crows_pairs")
    assert words in ei.value.one_line() and "\n" not in ei.value.one_line()


def test_gzip_content_under_another_name_says_so(tmp_path: Path) -> None:
    f = tmp_path / "pairs.csv"
    f.write_bytes(gzip.compress(crows_csv(3)))
    with pytest.raises(DataError, match=r"name the file \*\.gz"):
        _load(f, "crows_pairs")


def test_a_compressed_published_file_is_checked_as_stored(tmp_path: Path) -> None:
    packed = gzip.compress(crows_csv(12), mtime=0)
    folder = write_folder(tmp_path / "toy", {"pairs.csv.gz": packed},
                          doc=provenance(files=[file_entry("pairs.csv.gz", packed, 12)]))
    s = _load(folder / "pairs.csv.gz", "crows_pairs")
    assert s.provenance is not None and len(s.stimuli) == 12
    (folder / "pairs.csv.gz").write_bytes(gzip.compress(crows_csv(12), mtime=1))  # same content, other bytes
    with pytest.raises(DataError, match="does not match"):
        _load(folder / "pairs.csv.gz", "crows_pairs")
