"""The answers of a run, held compactly from the run stage to the end of the report
(issue 42: at a million requests they were the largest thing a run held, ~420 bytes an
answer as a key string, a tuple and the output's dict).

A run's requests are a plan's `RequestTable`, which already knows each key's position:
the answers are kept by that position, not under their key. Each answer's status is one
byte of a column (`status(k)` and `k in table` read only it); the rest of it (output,
error, kind of error, latency, attempts) is a row of a block of `CHUNK` positions,
marshalled and zlib-compressed once every position of the block is answered, or when
the run stage ends (`seal`). Reads in plan order, which every later stage does, decode
each block once (the last few blocks are kept decoded).

Why compressed blocks rather than reading the outputs back from the store: the stages
after the run read every answer two to four times (coding, metrics, responses.jsonl, the
report's answers), each read from SQLite would cost a query and a JSON parse, and a
re-render or a judge's table would need the store open to the end. A block costs a
`zlib.decompress` and a `marshal.loads` per `CHUNK` answers, and holds the same exact
objects (marshal keeps types, key order and floats bit for bit, as `RequestTable` does).
"""

from __future__ import annotations

import marshal
import zlib
from array import array
from collections.abc import Callable, Iterator, Mapping
from typing import Literal

from biasaudit.plan import Request
from biasaudit.plan.requests import RequestTable
from biasaudit.records.construct import rebuilt
from biasaudit.records.json import JSONObject
from biasaudit.records.responses import Response

CHUNK = 256
"""Answers per compressed block: one block of a plan's answers shares their wording, so
it compresses several-fold; small enough that an answer read out of order decodes little."""

_ABSENT, _OK, _FAILED, _WHOLE = 0, 1, 2, 3
_STATUS: dict[str, int] = {"ok": _OK, "failed": _FAILED}

# output, error, error_kind, latency_s, attempts, fields-set id
_Row = tuple[JSONObject | None, str | None, str | None, float, int, int]


class _Keys:
    """Key -> position, for reads that come by key many times an answer (about sixteen
    on the paper-scale grid: coding, metrics, trails, the report). The keys themselves
    are the plan's (`RequestTable` keeps them as raw digests; a plain mapping's list is
    kept); here only an open-addressing table of positions on each key's Python hash
    (which a `str` caches, so the callers' keys, read again and again, are not hashed
    again) and that hash beside each position: 16 to 24 bytes a key, against ~180 for a
    dict of key strings. A hit is confirmed against the key itself."""

    __slots__ = ("key", "_n", "_slots", "_hashes", "_mask", "_last")

    def __init__(self, requests: Mapping[str, Request]) -> None:
        if isinstance(requests, RequestTable):
            # the plan's table builds the key's text from its position (plan/requests.py)
            self.key: Callable[[int], str] = requests.key_at
        else:
            self.key = list(requests).__getitem__
        n = self._n = len(requests)
        size = 8
        while size < 2 * n:
            size *= 2
        self._mask = size - 1
        self._slots = array("i" if n < 2**31 else "q", [-1]) * size
        self._hashes = array("q", bytes(8 * n))
        self._last: tuple[object, int] = (None, -1)
        slots, mask, hashes = self._slots, self._mask, self._hashes
        for at, k in enumerate(requests):
            h = hashes[at] = hash(k)
            slot = h & mask
            while slots[slot] >= 0:
                slot = (slot + 1) & mask
            slots[slot] = at

    def __len__(self) -> int:
        return self._n

    def find(self, key: object) -> int:
        """The position of `key`, or -1."""
        last_key, last_at = self._last
        if key is last_key:  # `if k in answers: answers[k]` asks twice
            return last_at
        if not isinstance(key, str):
            return -1
        h = hash(key)
        slots, mask, hashes = self._slots, self._mask, self._hashes
        slot = h & mask
        while (at := slots[slot]) >= 0:
            if hashes[at] == h and self.key(at) == key:
                self._last = (key, at)
                return at
            slot = (slot + 1) & mask
        return -1


class AnswerTable(Mapping[str, Response]):
    """Key -> response for the keys of `requests` (a key of no request is refused: the
    engine answers only what it was asked). Reading a key gives a `Response` equal to the
    one added (the same fields and fields set), built on each access; iteration is in the
    order added, as a dict's. A response filed under another key than its own, or with an
    output marshal cannot hold (not JSON: a backend's own object), is kept whole."""

    __slots__ = ("_keys", "_status", "_order", "_blocks", "_open", "_filled", "_decoded", "_whole", "_sets")

    def __init__(self, requests: Mapping[str, Request]) -> None:
        self._keys = _Keys(requests)
        n = len(self._keys)
        self._status = bytearray(n)
        self._order = array("i") if n < 2**31 else array("q")
        self._blocks: dict[int, bytes] = {}
        self._open: dict[int, list[_Row | None]] = {}
        self._filled: dict[int, int] = {}
        self._decoded: dict[int, list[_Row | None]] = {}
        self._whole: dict[int, Response] = {}
        self._sets: list[frozenset[str]] = []

    # -- writing -----------------------------------------------------------------
    def __setitem__(self, key: str, response: Response) -> None:
        at = self._keys.find(key)
        if at < 0:
            raise KeyError(f"{key!r} is no request of this table")
        block, offset = divmod(at, CHUNK)
        rows = self._writable(block)
        if self._status[at] == _ABSENT:
            self._order.append(at)
            self._filled[block] = self._filled.get(block, 0) + 1
        self._whole.pop(at, None)
        if response.key != key:
            self._status[at] = _WHOLE
            self._whole[at] = response
            rows[offset] = None
        else:
            d = response.__dict__
            fs = frozenset(response.model_fields_set)
            try:
                sid = self._sets.index(fs)
            except ValueError:
                sid = len(self._sets)
                self._sets.append(fs)
            self._status[at] = _STATUS[d["status"]]
            rows[offset] = (d["output"], d["error"], d["error_kind"], d["latency_s"], d["attempts"], sid)
        if self._filled[block] == self._size(block):
            self._close(block)

    def _size(self, block: int) -> int:
        return min(CHUNK, len(self._keys) - block * CHUNK)

    def _writable(self, block: int) -> list[_Row | None]:
        """The block's rows as a list that can be written (a sealed block is reopened)."""
        rows = self._open.get(block)
        if rows is None:
            packed = self._blocks.pop(block, None)
            rows = list(self._decode(packed)) if packed is not None else [None] * self._size(block)
            self._decoded.pop(block, None)
            self._open[block] = rows
        return rows

    def _close(self, block: int) -> None:
        rows = self._open.pop(block)
        try:
            packed = marshal.dumps(rows)
        except ValueError:  # an output marshal cannot write: those answers kept whole
            base = block * CHUNK
            for offset, row in enumerate(rows):
                if row is not None and not _marshals(row):
                    at = base + offset
                    self._whole[at] = self._build(at, self._keys.key(at), row)
                    self._status[at] = _WHOLE
                    rows[offset] = None
            packed = marshal.dumps(rows)
        self._blocks[block] = zlib.compress(packed, 1)

    def seal(self) -> None:
        """Compress the blocks some of whose requests are unanswered (a budget that
        stopped, failures not retried, a cache read): the run stage is over."""
        for block in list(self._open):
            self._close(block)

    # -- reading -----------------------------------------------------------------
    @staticmethod
    def _decode(packed: bytes) -> list[_Row | None]:
        rows: list[_Row | None] = marshal.loads(zlib.decompress(packed))
        return rows

    def _row(self, at: int) -> _Row | None:
        block, offset = divmod(at, CHUNK)
        rows = self._open.get(block)
        if rows is None:
            rows = self._decoded.get(block)
            if rows is None:
                rows = self._decode(self._blocks[block])
                if len(self._decoded) >= 4:
                    # a new dict, not an eviction: stages may read from several threads
                    self._decoded = {}
                self._decoded[block] = rows
        return rows[offset]

    def _build(self, at: int, key: str, row: _Row) -> Response:
        output, error, error_kind, latency_s, attempts, sid = row
        status: Literal["ok", "failed"] = "ok" if self._status[at] == _OK else "failed"
        # what `Response.model_construct` sets, without its per-field loop
        return rebuilt(Response, {"key": key, "status": status, "output": output, "error": error,
                                  "error_kind": error_kind, "latency_s": latency_s, "attempts": attempts},
                       self._sets[sid])

    def _at(self, key: object) -> int:
        """The position of an answered `key`, or -1."""
        at = self._keys.find(key)
        return at if at >= 0 and self._status[at] != _ABSENT else -1

    def __getitem__(self, key: str) -> Response:
        at = self._at(key)
        if at < 0:
            raise KeyError(key)
        if self._status[at] == _WHOLE:
            return self._whole[at]
        row = self._row(at)
        assert row is not None
        return self._build(at, key, row)

    def status(self, key: str) -> str | None:
        """The stored status of `key` without reading its row (None: absent)."""
        at = self._at(key)
        if at < 0:
            return None
        s = self._status[at]
        return self._whole[at].status if s == _WHOLE else "ok" if s == _OK else "failed"

    def output(self, key: str) -> JSONObject | None:
        """The stored output of `key` (None: absent, or none) without building its record."""
        at = self._at(key)
        if at < 0:
            return None
        if self._status[at] == _WHOLE:
            return self._whole[at].output
        row = self._row(at)
        return None if row is None else row[0]

    def __contains__(self, key: object) -> bool:
        return self._at(key) >= 0

    def key_at(self, at: int) -> str:
        """The key of the request at position `at` of the table's requests."""
        return self._keys.key(at)

    def __iter__(self) -> Iterator[str]:
        key = self._keys.key
        return (key(at) for at in self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"AnswerTable({len(self)} responses)"


def _marshals(row: _Row) -> bool:
    try:
        marshal.dumps(row)
    except ValueError:
        return False
    return True


__all__ = ["CHUNK", "AnswerTable"]
