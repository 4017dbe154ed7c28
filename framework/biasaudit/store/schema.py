"""The cache's SQLite layout, version by version, in one place.

A cache keeps its layout's version in SQLite's own header field (`PRAGMA user_version`),
so it is read before any table is. Version 0 is every cache written before the field was
set: their layouts varied (tables were added as features came: `throughput`,
`calibrations`, the batch ledger, `embeddings`; columns too: `responses.error_kind`, `runs.pid` and
`runs.host`), so the one step from 0 looks at what the file holds. Every later step is
one fixed change from version k to k+1 (`STEPS`), and the store's readers then read only
the current layout.

Why here rather than checks beside each query: a cache is kept and shared (`biasaudit
merge-cache`, a reviewer's copy of an audit's store) and re-opened by later versions;
presence checks scattered over the readers drift apart, and a cache written by a newer
biasaudit would be read as if it were an older one. With the version, a newer cache is
refused with one line and an older one is brought forward in one transaction.

A cache opened read-only (planning, re-rendering, verifying) cannot be changed: its steps
are applied read-compatibly instead, on the connection's TEMP schema, which SQLite
searches before the file's (a missing table is an empty TEMP table; a table lacking a
column is a TEMP view of it with that column NULL). The file is left as it was."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from biasaudit.errors import StoreError

VERSION = 1
"""The cache layout this biasaudit writes (`PRAGMA user_version`)."""

# Version 1: the tables and their columns, in order (name, declaration).
Columns = tuple[tuple[str, str], ...]
TABLES: dict[str, Columns] = {
    "responses": (("key", "TEXT PRIMARY KEY"), ("kind", "TEXT NOT NULL"), ("request", "TEXT NOT NULL"),
                  ("status", "TEXT NOT NULL"), ("output", "TEXT"), ("error", "TEXT"), ("error_kind", "TEXT"),
                  ("attempts", "INTEGER NOT NULL DEFAULT 1"), ("latency_s", "REAL NOT NULL DEFAULT 0"),
                  ("created", "REAL NOT NULL")),
    "throughput": (("speed_key", "TEXT NOT NULL"), ("kind", "TEXT NOT NULL"), ("calls", "INTEGER NOT NULL"),
                   ("seconds", "REAL NOT NULL"), ("input_tokens", "INTEGER NOT NULL"),
                   ("output_tokens", "INTEGER NOT NULL"), ("recorded", "REAL NOT NULL")),
    "runs": (("run_id", "TEXT PRIMARY KEY"), ("audit", "TEXT NOT NULL"), ("run_dir", "TEXT NOT NULL"),
             ("started", "REAL NOT NULL"), ("finished", "REAL"), ("status", "TEXT NOT NULL"),
             ("manifest", "TEXT NOT NULL"), ("counts", "TEXT"), ("pid", "INTEGER"), ("host", "TEXT")),
    "calibrations": (("key", "TEXT NOT NULL"), ("layer", "TEXT NOT NULL"), ("recorded", "REAL NOT NULL"),
                     ("passed", "INTEGER NOT NULL"), ("result", "TEXT NOT NULL")),
    "batches": (("batch_id", "TEXT PRIMARY KEY"), ("provider", "TEXT NOT NULL"), ("model_key", "TEXT NOT NULL"),
                ("attempt", "INTEGER NOT NULL"), ("status", "TEXT NOT NULL"), ("submitted", "REAL NOT NULL"),
                ("finished", "REAL"), ("provider_status", "TEXT"), ("counts", "TEXT")),
    "batch_items": (("batch_id", "TEXT NOT NULL"), ("key", "TEXT NOT NULL"), ("request", "TEXT NOT NULL")),
    # also made by backends/embedder.py, which opens the cache without a Store (same declaration)
    "embeddings": (("model", "TEXT"), ("text", "TEXT"), ("vec", "BLOB")),
}
_TABLE_TAIL = {"batch_items": ", PRIMARY KEY (batch_id, key)", "embeddings": ", PRIMARY KEY (model, text)"}
_INDEXES = ("CREATE INDEX IF NOT EXISTS batch_items_key ON batch_items (key)",)
# Columns a version-0 cache may lack (added in place when they came): the others of each
# table were there from the table's first release.
_LATER_COLUMNS = {"responses": ("error_kind",), "runs": ("pid", "host")}


def _create(name: str, schema: str = "main") -> str:
    cols = ", ".join(f"{c} {decl}" for c, decl in TABLES[name])
    return f"CREATE TABLE IF NOT EXISTS {schema}.{name} ({cols}{_TABLE_TAIL.get(name, '')})"


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA main.table_info({table})")}


def _from_0(db: sqlite3.Connection, readonly: bool) -> None:
    """0 -> 1: every table of version 1, and the columns older caches lack. Read-only: an
    empty TEMP table for a missing table, a TEMP view adding NULL columns for an old one."""
    have = {r[0] for r in db.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
    for name, cols in TABLES.items():
        if name not in have:
            db.execute(_create(name, "temp" if readonly else "main"))
            continue
        present = _columns(db, name)
        missing = [(c, decl) for c, decl in cols if c not in present]
        unknown = [c for c, _ in missing if c not in _LATER_COLUMNS.get(name, ())]
        if unknown:  # not one of our layouts: refused by check_cache_db before this (key, status)
            raise StoreError(f"not a biasaudit cache (its {name} table lacks {', '.join(unknown)})",
                             key="runtime.cache", hint="give runtime.cache a file path of its own")
        if not missing:
            continue
        if readonly:
            sel = ", ".join(c if c in present else f"NULL AS {c}" for c, _ in cols)
            db.execute(f"CREATE TEMP VIEW {name} AS SELECT {sel} FROM main.{name}")
        else:
            for c, decl in missing:
                db.execute(f"ALTER TABLE main.{name} ADD COLUMN {c} {decl}")
    if not readonly:
        for sql in _INDEXES:
            db.execute(sql)


Step = Callable[[sqlite3.Connection, bool], None]
STEPS: dict[int, Step] = {0: _from_0}
"""Version k -> the step that brings a cache of version k to k+1 (every k below VERSION)."""


def version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA main.user_version").fetchone()[0])


def _check_readable(v: int, path: Path) -> None:
    if v > VERSION:
        raise StoreError(f"written by a newer biasaudit: cache layout version {v}; this version reads up to "
                         f"{VERSION}", file=str(path), key="runtime.cache",
                         hint="install a biasaudit at least as new as the one that wrote the cache, "
                              "or give this run a cache of its own")


def bring_up_to_date(db: sqlite3.Connection, path: Path, *, readonly: bool) -> int:
    """Apply the steps from the cache's version to VERSION (writable: in the file, in one
    transaction, then its version is set; read-only: on the TEMP schema). Returns the
    version the file was at. A cache newer than VERSION: StoreError, one line."""
    if readonly:
        v = version(db)
        _check_readable(v, path)
        for k in range(v, VERSION):
            STEPS[k](db, True)
        return v
    # BEGIN IMMEDIATE: two processes opening one old cache migrate it once, in turn
    db.execute("BEGIN IMMEDIATE")
    try:
        v = version(db)
        _check_readable(v, path)
        for k in range(v, VERSION):
            STEPS[k](db, False)
        if v < VERSION:
            db.execute(f"PRAGMA main.user_version = {VERSION}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return v


if sorted(STEPS) != list(range(VERSION)):  # a gap would leave a version unreadable
    raise TypeError(f"store.schema.STEPS must hold one step for each of 0..{VERSION - 1}")

__all__ = ["STEPS", "TABLES", "VERSION", "bring_up_to_date", "version"]
