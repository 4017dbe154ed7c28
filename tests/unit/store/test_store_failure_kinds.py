"""Failure kinds in the store: written and read back, counted by the engine, and a cache
written before kinds existed gains the column without losing rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from biasaudit.backends import Response
from biasaudit.engine import execute_requests
from biasaudit.plan import Request
from biasaudit.store import Store


def _req(key: str) -> Request:
    return Request(key=key, kind="generate", messages=[{"role": "user", "content": key}])


def test_kinds_round_trip_and_are_counted(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.sqlite")
    reqs = {k: _req(k) for k in ("a", "b", "c", "d", "e")}
    kinds = {"a": "timeout", "b": "timeout", "c": "empty", "d": None}

    class Backend:
        def execute(self, requests, emit):  # type: ignore[no-untyped-def]
            for r in requests:
                if r.key in kinds:
                    emit(Response(key=r.key, status="failed", error="x", error_kind=kinds[r.key]))
                else:
                    emit(Response(key=r.key, status="ok", output={"text": "fine"}))

        def close(self) -> None:
            pass

    _, stats = execute_requests(reqs, store, Backend, progress=False)
    assert store.get_many(["a", "c", "e"])["c"].error_kind == "empty"
    assert stats.failures == 4 and stats.answered == 1
    assert stats.failures_by_kind == {"empty": 1, "other": 1, "timeout": 2}  # no kind given: other
    store.close()


def test_old_cache_without_the_kind_column_is_upgraded(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, kind TEXT NOT NULL, request TEXT NOT NULL, "
                "status TEXT NOT NULL, output TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 1, "
                "latency_s REAL NOT NULL DEFAULT 0, created REAL NOT NULL)")
    con.execute("INSERT INTO responses VALUES ('k', 'generate', '{}', 'failed', NULL, 'HTTP 500', 3, 0.1, 0)")
    con.commit()
    con.close()
    store = Store(db)
    old = store.get_many(["k"])["k"]
    assert (old.status, old.error, old.error_kind, old.attempts) == ("failed", "HTTP 500", None, 3)
    store.put(_req("n"), Response(key="n", status="failed", error="cut", error_kind="malformed"))
    assert store.get_many(["n"])["n"].error_kind == "malformed"
    store.close()
