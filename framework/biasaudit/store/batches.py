"""The batches a run submitted to a provider's batch API, kept in the cache beside the
responses: each batch id with its provider, model, attempt and the requests it holds.

Why in the cache: a run killed after a submit must find its batches again and poll them,
never submit the same requests twice (each submit is paid for). The row is committed as
soon as the provider returns the batch id, before the first poll.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from biasaudit.plan import Request, canonical_json
from biasaudit.store.sqlite import Store

SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model_key TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    status TEXT NOT NULL,
    submitted REAL NOT NULL,
    finished REAL,
    provider_status TEXT,
    counts TEXT
);
CREATE TABLE IF NOT EXISTS batch_items (
    batch_id TEXT NOT NULL,
    key TEXT NOT NULL,
    request TEXT NOT NULL,
    PRIMARY KEY (batch_id, key)
);
CREATE INDEX IF NOT EXISTS batch_items_key ON batch_items (key);
"""


@dataclass(frozen=True)
class OpenBatch:
    batch_id: str
    provider: str
    attempt: int
    requests: dict[str, Request]


class BatchLedger:
    """The cache's record of submitted batches (one writer: the store's connection)."""

    def __init__(self, store: Store) -> None:
        self.db = store.db
        self.db.executescript(SCHEMA)

    def record(self, batch_id: str, provider: str, model_key: str, attempt: int, requests: Sequence[Request]) -> None:
        """Keep a submitted batch and its requests, in one transaction."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("INSERT OR REPLACE INTO batches (batch_id, provider, model_key, attempt, status, submitted) "
                            "VALUES (?, ?, ?, ?, 'open', ?)", (batch_id, provider, model_key, attempt, time.time()))
            self.db.executemany("INSERT OR REPLACE INTO batch_items (batch_id, key, request) VALUES (?, ?, ?)",
                                [(batch_id, r.key, canonical_json(r.model_dump())) for r in requests])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def open_batches(self, model_key: str, provider: str) -> list[OpenBatch]:
        """The model's batches submitted and not yet collected, oldest first."""
        rows = self.db.execute("SELECT batch_id, attempt FROM batches WHERE model_key = ? AND provider = ? "
                               "AND status = 'open' ORDER BY submitted", (model_key, provider)).fetchall()
        out = []
        for batch_id, attempt in rows:
            reqs = {k: Request.model_validate_json(r) for k, r in
                    self.db.execute("SELECT key, request FROM batch_items WHERE batch_id = ?", (batch_id,))}
            out.append(OpenBatch(batch_id=batch_id, provider=provider, attempt=int(attempt), requests=reqs))
        return out

    def close_batch(self, batch_id: str, provider_status: str, counts: dict[str, int]) -> None:
        """The batch's results are stored (or resubmitted): it is not polled again."""
        self.db.execute("UPDATE batches SET status = 'collected', finished = ?, provider_status = ?, counts = ? "
                        "WHERE batch_id = ?", (time.time(), provider_status, canonical_json(counts), batch_id))

    def submitted(self, keys: Iterable[str]) -> int:
        """How many batches hold any of `keys` (for tests and the report)."""
        keys = list(keys)
        seen: set[str] = set()
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            seen |= {r[0] for r in self.db.execute(f"SELECT DISTINCT batch_id FROM batch_items WHERE key IN ({marks})",
                                                   chunk)}
        return len(seen)
