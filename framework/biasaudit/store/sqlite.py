"""SQLite store (WAL): cached responses keyed by request hash, and per-run records.

Every response is committed as it arrives, so a killed run loses at most the calls in
flight and a rerun never repeats a finished one.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..backends.base import Response
from ..plan import Request, canonical_json

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL,
    output TEXT,
    error TEXT,
    error_kind TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    latency_s REAL NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    audit TEXT NOT NULL,
    run_dir TEXT NOT NULL,
    started REAL NOT NULL,
    finished REAL,
    status TEXT NOT NULL,
    manifest TEXT NOT NULL,
    counts TEXT
);
"""


class Store:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA busy_timeout=60000")
        self.db.executescript(SCHEMA)
        self._add_columns("responses", (("error_kind", "TEXT"),))  # caches from before failure kinds
        self._add_columns("runs", (("pid", "INTEGER"), ("host", "TEXT")))  # from before runs recorded their process

    def _add_columns(self, table: str, cols: tuple[tuple[str, str], ...]) -> None:
        """Older caches get new columns added in place."""
        have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
        for col, decl in cols:
            if col not in have:
                try:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {col} {decl}")
                except sqlite3.OperationalError as exc:  # another process added it first
                    if "duplicate column" not in str(exc):
                        raise

    def close(self) -> None:
        self.db.close()

    # -- responses ---------------------------------------------------------------
    def get_many(self, keys: Iterable[str]) -> dict[str, Response]:
        keys = list(keys)
        out: dict[str, Response] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            q = ("SELECT key, status, output, error, error_kind, attempts, latency_s FROM responses "
                 f"WHERE key IN ({marks})")
            for key, status, output, error, error_kind, attempts, latency in self.db.execute(q, chunk):
                out[key] = Response(
                    key=key, status=status, output=json.loads(output) if output else None,
                    error=error, error_kind=error_kind, attempts=attempts, latency_s=latency,
                )
        return out

    def put(self, request: Request, response: Response) -> None:
        """Write one response and commit it (autocommit mode)."""
        self.db.execute(
            "INSERT OR REPLACE INTO responses (key, kind, request, status, output, error, error_kind, attempts, "
            "latency_s, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                response.key, request.kind, canonical_json(request.model_dump(exclude={"key"})),
                response.status, canonical_json(response.output) if response.output is not None else None,
                response.error, response.error_kind, response.attempts, response.latency_s, time.time(),
            ),
        )

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def iter_requests(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for key, req in self.db.execute("SELECT key, request FROM responses"):
            yield key, json.loads(req)

    # -- runs --------------------------------------------------------------------
    def start_run(self, run_id: str, audit: str, run_dir: str, manifest: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO runs (run_id, audit, run_dir, started, status, manifest, pid, host) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, audit, run_dir, time.time(), "running", canonical_json(manifest), os.getpid(),
             socket.gethostname()),
        )

    def run_status(self, run_id: str) -> str | None:
        row = self.db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else str(row[0])

    def mark_stale_runs(self) -> list[dict[str, Any]]:
        """Runs still marked `running` whose process on this host is gone (killed, e.g. by
        SIGKILL or a power cut) become `interrupted`; returns them. Runs of live processes
        and of other hosts are left alone. A reused pid keeps a dead run `running` until
        that process ends too: the safe direction."""
        host = socket.gethostname()
        stale = []
        for run_id, run_dir, pid in self.db.execute(
            "SELECT run_id, run_dir, pid FROM runs WHERE status = 'running' AND host = ?", (host,)
        ).fetchall():
            if pid is None or _process_alive(int(pid)):
                continue
            cur = self.db.execute(
                "UPDATE runs SET status = 'interrupted', finished = ? WHERE run_id = ? AND status = 'running'",
                (time.time(), run_id),
            )
            if cur.rowcount:  # another process may have marked it first
                stale.append({"run_id": run_id, "run_dir": run_dir, "pid": pid})
        return stale

    def finish_run(self, run_id: str, status: str, counts: dict[str, Any]) -> None:
        self.db.execute(
            "UPDATE runs SET finished = ?, status = ?, counts = ? WHERE run_id = ?",
            (time.time(), status, canonical_json(counts), run_id),
        )

    def runs(self) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT run_id, audit, run_dir, started, finished, status, counts FROM runs ORDER BY started")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur]


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
