"""The cache's layout version (`PRAGMA user_version`, store/schema.py): an older cache opens
and reads, read-only without a byte changed, writable brought forward once; a newer one is
refused with one line (exit 2).

The older caches: the golden format-1 cache (tests/fixtures/format_v1/cache.sqlite, written
by main at 4a169ce, user_version 0), and a tiny cache in the layout before throughput,
calibrations and failure kinds were kept, built by the SQL below (what that layout's
`CREATE TABLE` said)."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from biasaudit.backends.base import Response
from biasaudit.cli.app import main
from biasaudit.errors import StoreError
from biasaudit.plan import Request
from biasaudit.store import Store
from biasaudit.store.schema import TABLES, VERSION

GOLDEN_CACHE = Path(__file__).resolve().parents[2] / "fixtures" / "format_v1" / "cache.sqlite"

OLD_LAYOUT = """
CREATE TABLE responses (key TEXT PRIMARY KEY, kind TEXT NOT NULL, request TEXT NOT NULL, status TEXT NOT NULL,
    output TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 1, latency_s REAL NOT NULL DEFAULT 0,
    created REAL NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, audit TEXT NOT NULL, run_dir TEXT NOT NULL, started REAL NOT NULL,
    finished REAL, status TEXT NOT NULL, manifest TEXT NOT NULL, counts TEXT);
INSERT INTO responses VALUES ('ok1', 'generate', '{}', 'ok', '{"text": "yes"}', NULL, 1, 0.5, 0);
INSERT INTO responses VALUES ('bad', 'generate', '{}', 'failed', NULL, 'HTTP 500', 3, 0.1, 0);
"""


def _old_cache(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.executescript(OLD_LAYOUT)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _user_version(path: Path) -> int:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
        return int(db.execute("PRAGMA user_version").fetchone()[0])


def _columns(path: Path, table: str) -> list[str]:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]


def test_the_golden_cache_reads_read_only_unchanged(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    shutil.copy(GOLDEN_CACHE, cache)
    before = _sha(cache)
    assert _user_version(cache) == 0  # written before caches carried a version
    store = Store(cache, readonly=True)
    assert store.count() == 96  # the golden run's 96 answers (tests/fixtures/format_v1/README.md)
    keys = [k for k, _ in store.iter_requests()]
    got = store.get_many(keys)
    assert len(got) == 96 and {r.status for r in got.values()} == {"ok"}
    store.close()
    assert _sha(cache) == before


def test_the_golden_cache_is_brought_forward_when_written(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    shutil.copy(GOLDEN_CACHE, cache)
    Store(cache).close()
    assert _user_version(cache) == VERSION
    assert _columns(cache, "batches") == [c for c, _ in TABLES["batches"]]
    assert Store(cache, readonly=True).count() == 96


def test_an_old_layout_opens_read_only_and_reads(tmp_path: Path) -> None:
    cache = _old_cache(tmp_path / "old.sqlite")
    before = _sha(cache)
    store = Store(cache, readonly=True)
    got = store.get_many(["ok1", "bad"])
    assert (got["ok1"].status, got["ok1"].output) == ("ok", {"text": "yes"})
    assert (got["bad"].error, got["bad"].error_kind, got["bad"].attempts) == ("HTTP 500", None, 3)
    assert store.throughput({"m": 1}, "generate") is None  # no throughput table: nothing measured
    assert store.last_calibration("coder") is None  # no calibrations table: never calibrated
    assert store.runs() == []
    store.close()
    assert _sha(cache) == before and _user_version(cache) == 0


def test_an_old_layout_is_migrated_once_on_a_writable_open(tmp_path: Path) -> None:
    cache = _old_cache(tmp_path / "old.sqlite")
    store = Store(cache)
    store.record_throughput({"m": 1}, "generate", 4, 2.0, 10, 20)
    store.put(Request(key="n", kind="generate", messages=[{"role": "user", "content": "n"}]),
              Response(key="n", status="failed", error="cut", error_kind="malformed"))
    store.close()
    assert _user_version(cache) == VERSION
    for table, cols in TABLES.items():
        assert set(_columns(cache, table)) == {c for c, _ in cols}, table
    store = Store(cache, readonly=True)
    assert store.throughput({"m": 1}, "generate") is not None
    assert store.get_many(["n"])["n"].error_kind == "malformed"
    store.close()


def test_merge_reads_an_old_layout_source(tmp_path: Path) -> None:
    src = _old_cache(tmp_path / "old.sqlite")
    into = Store(tmp_path / "into.sqlite")
    assert into.merge_from(src) == 2
    assert into.get_many(["bad"])["bad"].error_kind is None
    into.close()
    assert _user_version(src) == 0  # a source is kept unchanged


def _newer(path: Path) -> Path:
    Store(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {VERSION + 1}")
    return path


@pytest.mark.parametrize("readonly", [True, False])
def test_a_newer_cache_is_refused(tmp_path: Path, readonly: bool) -> None:
    cache = _newer(tmp_path / "new.sqlite")
    with pytest.raises(StoreError, match=f"newer biasaudit: cache layout version {VERSION + 1}"):
        Store(cache, readonly=readonly)


def test_a_newer_cache_is_one_line_and_exit_2_at_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = _newer(tmp_path / "new.sqlite")
    code = main(["merge-cache", str(tmp_path / "into.sqlite"), str(cache)])
    err = capsys.readouterr().err
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[0].startswith("error:") and "written by a newer biasaudit" in lines[0] and str(cache) in lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "into.sqlite").exists()  # refused before the target was made
