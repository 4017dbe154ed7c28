"""The batches a run submitted to a provider's batch API, kept in the cache beside the
responses: each batch id with its provider, model, attempt and the requests it holds.

Why in the cache: a run killed after a submit must find its batches again and poll them,
never submit the same requests twice (each submit is paid for). Before a submit, an
intent row is committed: the batch's requests under a unique tag (in `batch_id`, status
`intent`) that goes to the provider with the batch. When the provider returns the batch
id, the intent becomes the batch (`record`: renamed to the id, status `open`). A kill in
the instant between the provider's answer and that commit leaves the intent, which the
next run looks up at the provider by its tag before submitting anything (engine/batch.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from biasaudit.plan import Request, canonical_json
from biasaudit.store.sqlite import Store


@dataclass(frozen=True)
class OpenBatch:
    batch_id: str
    provider: str
    attempt: int
    requests: dict[str, Request]


@dataclass(frozen=True)
class Intent:
    """A batch committed before its submit, whose batch id was never recorded."""

    tag: str
    attempt: int
    requests: dict[str, Request]
    created: float
    """When the intent was committed (seconds since the epoch): the provider's batch, if
    any, was created after it."""


class BatchLedger:
    """The cache's record of submitted batches (one writer: the store's connection; its
    tables are part of the cache's layout, store/schema.py)."""

    def __init__(self, store: Store) -> None:
        self.db = store.db

    def intend(self, tag: str, provider: str, model_key: str, attempt: int, requests: Sequence[Request]) -> None:
        """Keep a batch about to be submitted (its tag and requests), in one transaction,
        committed before the submit: a kill after the provider took it finds it here."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("INSERT OR REPLACE INTO batches (batch_id, provider, model_key, attempt, status, submitted) "
                            "VALUES (?, ?, ?, ?, 'intent', ?)", (tag, provider, model_key, attempt, time.time()))
            self.db.executemany("INSERT OR REPLACE INTO batch_items (batch_id, key, request) VALUES (?, ?, ?)",
                                [(tag, r.key, canonical_json(r.model_dump())) for r in requests])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def record(self, tag: str, batch_id: str) -> None:
        """The intent `tag` was submitted as `batch_id`: from now on it is polled, in one transaction."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("UPDATE batches SET batch_id = ?, status = 'open', submitted = ? "
                            "WHERE batch_id = ? AND status = 'intent'", (batch_id, time.time(), tag))
            self.db.execute("UPDATE batch_items SET batch_id = ? WHERE batch_id = ?", (batch_id, tag))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def intents(self, model_key: str, provider: str) -> list[Intent]:
        """The model's batches committed as intents whose submit has no recorded id, oldest first."""
        return [Intent(b.batch_id, b.attempt, b.requests, t) for b, t in self._rows(model_key, provider, "intent")]

    def open_batches(self, model_key: str, provider: str) -> list[OpenBatch]:
        """The model's batches submitted and not yet collected, oldest first."""
        return [b for b, _ in self._rows(model_key, provider, "open")]

    def _rows(self, model_key: str, provider: str, status: str) -> list[tuple[OpenBatch, float]]:
        rows = self.db.execute("SELECT batch_id, attempt, submitted FROM batches WHERE model_key = ? AND provider = ? "
                               "AND status = ? ORDER BY submitted", (model_key, provider, status)).fetchall()
        out = []
        for batch_id, attempt, submitted in rows:
            reqs = {k: Request.model_validate_json(r) for k, r in
                    self.db.execute("SELECT key, request FROM batch_items WHERE batch_id = ?", (batch_id,))}
            out.append((OpenBatch(batch_id=batch_id, provider=provider, attempt=int(attempt), requests=reqs),
                        float(submitted)))
        return out

    def close_batch(self, batch_id: str, provider_status: str, counts: dict[str, int]) -> None:
        """The batch's results are stored (or resubmitted): it is not polled again."""
        self.db.execute("UPDATE batches SET status = 'collected', finished = ?, provider_status = ?, counts = ? "
                        "WHERE batch_id = ?", (time.time(), provider_status, canonical_json(counts), batch_id))

    def submitted(self, keys: Iterable[str]) -> int:
        """How many batches (intents included) hold any of `keys` (for tests and the report)."""
        keys = list(keys)
        seen: set[str] = set()
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            seen |= {r[0] for r in self.db.execute(f"SELECT DISTINCT batch_id FROM batch_items WHERE key IN ({marks})",
                                                   chunk)}
        return len(seen)
