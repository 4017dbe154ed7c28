"""SQLite store (WAL): cached responses keyed by request hash, and per-run records.

Every response is committed as it arrives, so a killed run loses at most the calls in
flight and a rerun never repeats a finished one. Answers that arrive together (a finished
batch of a local model, the results of a provider's batch, what an event loop handed over
at once) are written in one transaction right away (`Store.together`): never held back
waiting for more.

The cache path is the user's: it may name a directory, a device, someone else's SQLite
database or a damaged file. Each is refused with a one-line `StoreError` before SQLite
writes anything there (no tables added to a foreign database, no `-journal` beside a
device), and a damaged row is reported with its key rather than a traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import socket
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from biasaudit._util.fileio import check_store_file, path_problem
from biasaudit.backends.base import Response
from biasaudit.errors import StoreError
from biasaudit.plan import Request, canonical_json
from biasaudit.records.json import JSONObject
from biasaudit.store.schema import bring_up_to_date


class StaleRun(TypedDict):
    """A run marked interrupted by `Store.mark_stale_runs`."""

    run_id: str
    run_dir: str
    pid: int


class RunRow(TypedDict):
    """A row of the cache's `runs` table, as `Store.runs` returns it."""

    run_id: str
    audit: str
    run_dir: str
    started: float
    finished: float | None
    status: str
    counts: str | None
    """The run's counts as canonical JSON text (None until it finished)."""


@dataclass(frozen=True)
class Throughput:
    measurements: int
    calls: int
    seconds: float
    input_tokens: int
    output_tokens: int

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds


OUR_TABLES = {"responses", "throughput", "runs", "embeddings"}
RESPONSE_COLUMNS = ("key", "kind", "request", "status", "output", "error", "error_kind", "attempts", "latency_s",
                    "created")
THROUGHPUT_COLUMNS = ("speed_key", "kind", "calls", "seconds", "input_tokens", "output_tokens", "recorded")
_HINT = "give runtime.cache a file path of its own (a new cache is created there), or move the damaged file away"


def check_cache_path(path: str | Path, *, must_exist: bool = False) -> None:
    """Refuse a cache path that is not a regular file (or a new file in a folder that can
    be made), before SQLite touches it. A cache to write is an output path the user names
    (`fileio.check_store_file`: symlinks followed, no directory, FIFO, socket, device or
    pseudo file, a writable folder); one only read must exist."""
    p = Path(path)
    if not must_exist:
        check_store_file(p, key="runtime.cache", what="cache", error=StoreError, hint=_HINT)
        return
    if not p.exists() and not p.is_symlink():
        raise StoreError("cache file not found", file=str(p), key="runtime.cache",
                         hint="give the cache the run used (manifest.json names it)")
    problem = path_problem(p)
    if problem:
        raise StoreError(f"the cache is {problem}" if problem.startswith(("a ", "not ")) else f"cache: {problem}",
                         file=str(p), key="runtime.cache", hint=_HINT)


def _not_a_cache(path: Path, why: str) -> StoreError:
    return StoreError(f"not a biasaudit cache ({why})", file=str(path), key="runtime.cache", hint=_HINT)


def check_cache_db(db: sqlite3.Connection, path: Path, *, schema: str = "main") -> None:
    """The database is a biasaudit cache (or empty): SQLite can read it, and any
    `responses` table has the columns the store reads. Raises `StoreError`."""
    try:
        tables = {r[0] for r in db.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")}
        if not tables:
            return
        if not tables & OUR_TABLES:
            raise _not_a_cache(path, f"an SQLite database with other tables: {', '.join(sorted(tables))[:80]}")
        if "responses" not in tables:
            return  # a cache from before responses were kept apart (the schema adds the table)
        have = {r[1] for r in db.execute(f"PRAGMA {schema}.table_info(responses)")}
    except sqlite3.DatabaseError as exc:
        raise _not_a_cache(path, str(exc)) from None
    missing = [c for c in ("key", "status") if c not in have]
    if missing:
        raise _not_a_cache(path, f"its responses table lacks {', '.join(missing)}")


def speed_key(identity: JSONObject) -> str:
    """Which measurements apply to a model: its identity without the standing system
    prompt (a variant runs on the same weights at about the same speed)."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "system_prompt"}
        return node

    return hashlib.sha256(canonical_json(strip(identity)).encode("utf-8")).hexdigest()[:32]


def _busy(exc: BaseException) -> bool:
    """SQLite's "database is locked" / "busy": another process holds the lock."""
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def _locked(path: Path) -> StoreError:
    return StoreError("the cache stayed locked by another process", file=str(path), key="runtime.cache",
                      hint="wait for the other run to finish, or give this run a cache of its own")


# How long opening a cache waits for other processes opening or writing it at the same
# moment (parallel sweep jobs on one file).
OPEN_WAIT_S = 120.0


class Store:
    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        check_cache_path(self.path, must_exist=readonly)
        deadline = time.monotonic() + OPEN_WAIT_S
        while True:
            try:
                self._open(readonly)
                return
            except StoreError:
                self._close_quietly()
                raise
            except sqlite3.DatabaseError as exc:
                self._close_quietly()
                if not _busy(exc):
                    raise _not_a_cache(self.path, str(exc)) from None
                # Switching a fresh file to WAL, or creating the tables, while another
                # process does the same can fail at once with "database is locked": SQLite
                # skips the busy handler where waiting could deadlock. Opening is
                # idempotent, so it is simply tried again after a short random pause.
                if time.monotonic() > deadline:
                    raise _locked(self.path) from None
                time.sleep(random.uniform(0.02, 0.2))
            except OSError as exc:  # the folder cannot be made
                raise StoreError(f"cannot create the cache ({exc.strerror or exc})", file=str(self.path),
                                 key="runtime.cache", hint=_HINT) from None

    def _open(self, readonly: bool) -> None:
        if readonly:
            # planning and re-rendering look at an existing cache without writing to it
            self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=60.0,
                                      isolation_level=None)
            check_cache_db(self.db, self.path)
            bring_up_to_date(self.db, self.path, readonly=True)  # store/schema.py: on TEMP, the file unchanged
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
        self.db.execute("PRAGMA busy_timeout=60000")
        check_cache_db(self.db, self.path)
        # WAL: readers (a parallel sweep job, `biasaudit plan`) never block the writer, and
        # a commit appends to the log instead of rewriting pages. synchronous=NORMAL: a
        # commit is not fsynced (only checkpoints are), so a killed process loses nothing
        # committed and a power cut may lose the last commits but never corrupts the file
        # (SQLite's documented WAL guarantee; docs/running-at-scale.md, "Durability").
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        bring_up_to_date(self.db, self.path, readonly=False)  # store/schema.py: an older layout's steps

    def _close_quietly(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            db.close()
            del self.db

    def close(self) -> None:
        self.db.close()

    # -- responses ---------------------------------------------------------------
    def get_many(self, keys: Iterable[str]) -> dict[str, Response]:
        return dict(self.iter_many(keys))

    def iter_many(self, keys: Iterable[str]) -> Iterator[tuple[str, Response]]:
        """(key, response) of each of `keys` the store holds, read 500 keys at a time: a
        caller that keeps them compactly never holds all the records at once."""
        keys = list(keys)
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            q = ("SELECT key, status, output, error, error_kind, attempts, latency_s FROM responses "
                 f"WHERE key IN ({marks})")
            try:
                rows = self.db.execute(q, chunk).fetchall()
            except sqlite3.DatabaseError as exc:
                if _busy(exc):
                    raise _locked(self.path) from None
                raise _not_a_cache(self.path, f"damaged: {exc}") from None
            for key, status, output, error, error_kind, attempts, latency in rows:
                yield key, self._row(key, status, output, error, error_kind, attempts, latency)

    def _row(self, key: str, status: Any, output: Any, error: Any, error_kind: Any, attempts: Any,
             latency: Any) -> Response:
        """A stored response, or a StoreError naming the row when it was damaged."""
        try:
            if status not in ("ok", "failed"):
                raise ValueError(f"status {str(status)[:20]!r}")
            return Response(key=key, status=status, output=json.loads(output) if output else None,
                            error=error, error_kind=error_kind, attempts=attempts, latency_s=latency)
        except (ValueError, TypeError, RecursionError) as exc:  # pydantic's ValidationError is a ValueError
            raise StoreError(f"stored response {key[:40]} is damaged ({str(exc).splitlines()[0][:80]})",
                             file=str(self.path), key="runtime.cache",
                             hint="delete that row (or the cache) and run again: the request is sent anew") from None

    def put(self, request: Request, response: Response, *, output_json: str | None = None) -> None:
        """Write one response and commit it (autocommit mode; inside `together`, with the
        others of its group). `output_json`: the output's canonical JSON when the caller
        has it already (the engine encodes it to look for unstorable text)."""
        if output_json is None and response.output is not None:
            output_json = canonical_json(response.output)
        self.db.execute(
            "INSERT OR REPLACE INTO responses (key, kind, request, status, output, error, error_kind, attempts, "
            "latency_s, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                response.key, request.kind, request_json(request), response.status, output_json,
                response.error, response.error_kind, response.attempts, response.latency_s, time.time(),
            ),
        )

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Write what the block puts in one transaction, committed when the block ends:
        for answers already in hand (a finished batch), never to wait for more, so a kill
        loses only answers that were not yet written and a resume asks only those again.
        It commits also when the block ends by an exception other than the database's
        (Ctrl-C after an answer, a backend error: what was put is whole and kept); a
        database error rolls the group back. Inside an open transaction it adds nothing."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except sqlite3.DatabaseError:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        finally:
            if self.db.in_transaction:
                self.db.execute("COMMIT")

    def count_ok(self, keys: Iterable[str]) -> int:
        """How many of `keys` have a successful stored response."""
        keys = list(keys)
        n = 0
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            q = f"SELECT COUNT(*) FROM responses WHERE status = 'ok' AND key IN ({marks})"
            n += int(self.db.execute(q, chunk).fetchone()[0])
        return n

    # -- measured throughput -------------------------------------------------------
    def record_throughput(self, identity: JSONObject, kind: str, calls: int, seconds: float,
                          input_tokens: int, output_tokens: int) -> None:
        """Remember how fast a model answered `calls` requests of one kind, for plan estimates."""
        self.db.execute(
            "INSERT INTO throughput (speed_key, kind, calls, seconds, input_tokens, output_tokens, recorded) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (speed_key(identity), kind, calls, seconds, input_tokens, output_tokens, time.time()),
        )

    def throughput(self, identity: JSONObject, kind: str, last: int = 20) -> Throughput | None:
        """Pooled rate of the model's last `last` measurements of this kind, or None."""
        row = self.db.execute(
            "SELECT COUNT(*), SUM(calls), SUM(seconds), SUM(input_tokens), SUM(output_tokens) FROM "
            "(SELECT * FROM throughput WHERE speed_key = ? AND kind = ? ORDER BY recorded DESC LIMIT ?)",
            (speed_key(identity), kind, last),
        ).fetchone()
        if not row[0] or not row[2]:
            return None
        return Throughput(measurements=row[0], calls=row[1], seconds=row[2], input_tokens=row[3],
                          output_tokens=row[4])

    def merge_from(self, other: str | Path) -> int:
        """Copy another cache's responses and throughput records into this one; a key
        already here keeps its stored response unless that is a failure and the other's
        is not. Returns how many responses were added or replaced. The other cache is read
        as a read-only store (any earlier layout, through store/schema.py)."""
        src = Path(other)
        check_cache_path(src, must_exist=True)
        if src.resolve() == self.path.resolve():
            raise StoreError("a cache cannot be merged into itself", file=str(src), hint="give another cache file")
        source = Store(src, readonly=True)  # readable, and a biasaudit cache (or empty)
        cols, tp = ", ".join(RESPONSE_COLUMNS), ", ".join(THROUGHPUT_COLUMNS)
        before = self.db.total_changes
        try:
            self.db.execute("BEGIN IMMEDIATE")
            rows = source.db.execute(f"SELECT {cols} FROM responses")
            while chunk := rows.fetchmany(1000):
                self.db.executemany(
                    f"INSERT INTO responses ({cols}) VALUES ({', '.join('?' * len(RESPONSE_COLUMNS))}) "
                    "ON CONFLICT (key) DO UPDATE SET "
                    + ", ".join(f"{c} = excluded.{c}" for c in RESPONSE_COLUMNS if c != "key")
                    + " WHERE responses.status = 'failed' AND excluded.status = 'ok'", chunk)
            added = self.db.total_changes - before
            self.db.executemany(f"INSERT INTO throughput ({tp}) VALUES ({', '.join('?' * len(THROUGHPUT_COLUMNS))})",
                                source.db.execute(f"SELECT {tp} FROM throughput"))
            self.db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise _not_a_cache(src, f"cannot merge it: {exc}") from None
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        finally:
            source.close()
        return added

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def iter_requests(self) -> Iterator[tuple[str, JSONObject]]:
        for key, req in self.db.execute("SELECT key, request FROM responses"):
            yield key, json.loads(req)

    # -- runs --------------------------------------------------------------------
    def start_run(self, run_id: str, audit: str, run_dir: str, manifest: JSONObject) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO runs (run_id, audit, run_dir, started, status, manifest, pid, host) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, audit, run_dir, time.time(), "running", canonical_json(manifest), os.getpid(),
             socket.gethostname()),
        )

    def run_status(self, run_id: str) -> str | None:
        row = self.db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else str(row[0])

    def mark_stale_runs(self) -> list[StaleRun]:
        """Runs still marked `running` whose process on this host is gone (killed, e.g. by
        SIGKILL or a power cut) become `interrupted`; returns them. Runs of live processes
        and of other hosts are left alone. A reused pid keeps a dead run `running` until
        that process ends too: the safe direction."""
        host = socket.gethostname()
        stale: list[StaleRun] = []
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
                stale.append({"run_id": str(run_id), "run_dir": str(run_dir), "pid": int(pid)})
        return stale

    def finish_run(self, run_id: str, status: str, counts: Mapping[str, object]) -> None:
        self.db.execute(
            "UPDATE runs SET finished = ?, status = ?, counts = ? WHERE run_id = ?",
            (time.time(), status, canonical_json(counts), run_id),
        )

    def record_calibration(self, key: str, layer: str, passed: bool, result: Mapping[str, object]) -> None:
        """Keep a `biasaudit calibrate` result of a coder (`key`: the coder's identity)."""
        self.db.execute("INSERT INTO calibrations VALUES (?, ?, ?, ?, ?)",
                        (key, layer, time.time(), int(passed), json.dumps(result, default=str)))

    def last_calibration(self, key: str) -> JSONObject | None:
        """The newest stored calibration of the coder `key` (None: never calibrated)."""
        row = self.db.execute("SELECT recorded, passed, result FROM calibrations WHERE key = ? "
                              "ORDER BY recorded DESC LIMIT 1", (key,)).fetchone()
        if row is None:
            return None
        return {"recorded": row[0], "passed": bool(row[1]), **json.loads(row[2])}

    def runs(self) -> list[RunRow]:
        cur = self.db.execute("SELECT run_id, audit, run_dir, started, finished, status, counts FROM runs ORDER BY started")
        return [RunRow(run_id=r[0], audit=r[1], run_dir=r[2], started=r[3], finished=r[4], status=r[5], counts=r[6])
                for r in cur]


def request_json(request: Request) -> str:
    """The stored text of a request: `canonical_json(request.model_dump(exclude={"key"}))`,
    from the record's fields (`Request.body`; tests/unit/store: equal to the dump)."""
    return canonical_json(request.body())


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
