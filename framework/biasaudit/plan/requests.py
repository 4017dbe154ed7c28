"""Requests (one model call each), plan items, and the content hash that keys the cache."""

from __future__ import annotations

import hashlib
import json
import marshal
import zlib
from array import array
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from biasaudit.records.construct import rebuilt
from biasaudit.records.json import JSONObject


class Decoding(BaseModel):
    """`Request.params` as the settings backends read. The params stay a JSON object on
    the request (its key hashes them as given, and a coder may add its own); this is how a
    backend reads them, typed. A setting the request leaves out is None here: each backend
    has its own default for it."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    """Sampled generation: the run's seed (the sample index is added to it)."""
    top_k: int | None = None
    """`next_token`: how many of the most probable next tokens to return."""
    choices: list[str] = Field(default_factory=list)
    """`choice`: the answer words."""


class Request(BaseModel):
    model_config = ConfigDict(frozen=True)
    key: str
    kind: str
    text: str | None = None
    """Raw text, for scoring probes (no chat template); the premise for `classify_nli`."""
    text_pair: str | None = None
    """The hypothesis, for `classify_nli`."""
    messages: list[dict[str, str]] | None = None
    """Chat messages, for chat probes."""
    params: JSONObject = {}
    """Decoding parameters, hashed into the key as given; read them with `decoding()`."""
    sample: int = 0
    stimulus: JSONObject | None = None
    """The stimulus a backend that reads it is sent (`sends_stimulus`: an application's
    request template, recorded decisions): its `id`, `fields` (the stimulus's fields and
    the cell's level vars) and `levels`. Hashed into the key when set; None otherwise."""

    def decoding(self) -> Decoding:
        return Decoding.model_validate(self.params)

    def body(self) -> dict[str, Any]:
        """`model_dump(exclude={"key"})`, read from the fields (issue 42: pydantic's dump
        with this record's wrap serializer was a sixth of the engine's time per request,
        and most of a trail line's). Every field is plain JSON, so the dump is the fields
        in declared order, `stimulus` left out when None; a subclass or an unexpected
        field goes through `model_dump`. The store's text and responses.jsonl read it."""
        d = self.__dict__
        if type(self) is not Request or tuple(d) != _FIELDS:
            return self.model_dump(exclude={"key"})
        out = {"kind": d["kind"], "text": d["text"], "text_pair": d["text_pair"], "messages": d["messages"],
               "params": d["params"], "sample": d["sample"]}
        if d["stimulus"] is not None:
            out["stimulus"] = d["stimulus"]
        return out

    @model_serializer(mode="wrap")
    def _no_unset_stimulus(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # requests of every other backend are stored and written byte for byte as before
        out: dict[str, Any] = handler(self)
        if self.stimulus is None:
            out.pop("stimulus", None)
        return out


_FIELDS = tuple(Request.model_fields)

_Message = tuple[str, str]
# what differs between the requests of one table: text, messages as (role, content) pairs,
# text pair, stimulus
_Row = tuple[str | None, tuple[_Message, ...] | None, str | None, JSONObject | None]
_ALL_FIELDS = frozenset(Request.model_fields)
_CHUNK = 64
"""Rows per compressed block: a block of one plan's prompts shares its template text, so
it compresses about tenfold, and a sequential read decodes each block once."""


class _KeyIndex:
    """Position of each request's key, held as raw digests: the 32 bytes of each SHA-256
    key in one buffer (in the order added) and an open-addressing hash table of positions
    on their first 8 bytes (an `array` at most half full: 8 to 16 bytes a key), instead
    of a dict entry and a 64-character string (about 180 bytes). A key that is not a
    lowercase SHA-256 hex digest (tests, hand-made tables) is held in a dict beside them."""

    __slots__ = ("digests", "odd", "odd_at", "slots", "mask", "n")

    def __init__(self) -> None:
        self.digests = bytearray()
        self.odd: dict[str, int] = {}
        self.odd_at: dict[int, str] = {}
        self.slots = array("q", [-1]) * 8
        self.mask = 7
        self.n = 0

    @staticmethod
    def digest(key: object) -> bytes | None:
        if not isinstance(key, str) or len(key) != 64:
            return None
        try:
            raw = bytes.fromhex(key)
        except ValueError:
            return None
        return raw if raw.hex() == key else None  # upper case is another key

    def find(self, key: object) -> int:
        """The position of `key`, or -1."""
        raw = self.digest(key)
        if raw is None:
            return self.odd.get(key, -1) if isinstance(key, str) else -1
        slots, mask, digests = self.slots, self.mask, self.digests
        slot = int.from_bytes(raw[:8], "big") & mask
        while (at := slots[slot]) >= 0:
            if digests[at * 32:at * 32 + 32] == raw:
                return at
            slot = (slot + 1) & mask
        return -1

    def append(self, key: str) -> int:
        """Add `key` (not there yet) at the next position."""
        at = self.n
        raw = self.digest(key)
        if raw is None:
            self.odd[key] = at
            self.odd_at[at] = key
            raw = bytes(32)  # a placeholder; never looked up through the digests
        else:
            self._place(raw, at)
        self.digests += raw
        self.n += 1
        if 2 * (self.n - len(self.odd)) > self.mask + 1:
            self._grow()
        return at

    def _place(self, raw: bytes, at: int) -> None:
        slots, mask = self.slots, self.mask
        slot = int.from_bytes(raw[:8], "big") & mask
        while slots[slot] >= 0:
            slot = (slot + 1) & mask
        slots[slot] = at

    def _grow(self) -> None:
        self.slots = array("q", [-1]) * (2 * (self.mask + 1))
        self.mask = 2 * self.mask + 1
        digests = self.digests
        for at in range(self.n):
            if at not in self.odd_at:
                self._place(bytes(digests[at * 32:at * 32 + 8]), at)

    def pack(self) -> None:
        """The positions as 4-byte integers when they fit (a plan under 2**31 keys)."""
        if self.slots.typecode == "q" and self.n < 2**31:
            self.slots = array("i", self.slots)

    def key(self, at: int) -> str:
        odd = self.odd_at.get(at) if self.odd_at else None
        return odd if odd is not None else self.digests[at * 32:at * 32 + 32].hex()


class RequestTable(Mapping[str, Request]):
    """Key -> request of a plan, held compactly (issue 42). A plan's requests share their
    kind and decoding parameters; what differs (text, messages, text pair, stimulus) is
    kept in zlib-compressed blocks of `_CHUNK` rows (marshal: exact types and key order),
    each request's key as its raw digest (`_KeyIndex`), its sample and fields-set in
    arrays: about 70 bytes a request on the paper-scale grid, against 566 as a tuple row
    and 1.9 KB as a `Request`. Reading a key gives a `Request` equal to the one added (the
    same dump and fields set), built on each access from the decoded block (the last few
    blocks are kept decoded: reads in plan order decode each block once). Its `params` is
    the table's one object: requests are frozen, nobody writes to it. A request of
    another kind or parameter set, or with messages of other keys, is kept whole."""

    __slots__ = ("_kind", "_params", "_index", "_samples", "_sets", "_set_ids", "_blocks", "_open",
                 "_whole", "_decoded")

    def __init__(self, kind: str, params: JSONObject) -> None:
        self._kind = kind
        self._params = params
        self._index = _KeyIndex()
        self._samples = array("q")
        self._sets: list[frozenset[str]] = []
        self._set_ids = array("H")
        self._blocks: list[bytes] = []
        self._open: list[_Row | None] = []
        self._whole: dict[int, Request] = {}
        self._decoded: dict[int, list[_Row | None]] = {}

    def add(self, req: Request) -> None:
        """Keep `req` under its key unless one is there already (`dict.setdefault`)."""
        if self._index.find(req.key) >= 0:
            return
        d = req.__dict__
        msgs = d["messages"]
        if (d["kind"] != self._kind or d["params"] != self._params
                or (msgs is not None and not all(len(m) == 2 and list(m) == ["role", "content"] for m in msgs))):
            self._put(req.key, None, d["sample"], frozenset(req.model_fields_set))
            self._whole[self._index.n - 1] = req
            return
        pairs = None if msgs is None else tuple((m["role"], m["content"]) for m in msgs)
        self._put(req.key, (d["text"], pairs, d["text_pair"], d["stimulus"]), d["sample"],
                  frozenset(req.model_fields_set))

    def add_parts(self, key: str, text: str | None, messages: list[dict[str, str]] | None, sample: int,
                  text_pair: str | None, stimulus: JSONObject | None) -> int:
        """`add(Request(key=key, kind=<the table's>, text=text, messages=messages,
        params=<the table's>, sample=sample, text_pair=text_pair, stimulus=stimulus))`
        without building the record: the plan's messages are {role, content} dicts of
        text, already what the record would validate to. Returns the key's position
        (`key_at`): a plan item holds it instead of the key (`plan.items.ItemTable`)."""
        at = self._index.find(key)
        if at >= 0:
            return at
        pairs = None if messages is None else tuple((m["role"], m["content"]) for m in messages)
        self._put(key, (text, pairs, text_pair, stimulus), sample, _ALL_FIELDS)
        return self._index.n - 1

    def key_at(self, at: int) -> str:
        """The key at position `at` (in the order added)."""
        if not 0 <= at < self._index.n:
            raise IndexError(at)
        return self._index.key(at)

    def keys_at(self, positions: npt.NDArray[np.integer]) -> list[str]:
        """`key_at` of each position, for positions this table gave (`add_parts`): the
        digests gathered and hex-encoded in one call, then cut into keys (a plan's
        items read all their keys at every pass over them)."""
        index = self._index
        rows = np.frombuffer(index.digests, dtype=np.uint8).reshape(-1, 32)[positions]
        hexed = rows.tobytes().hex()
        del rows
        out = [hexed[i:i + 64] for i in range(0, len(hexed), 64)]
        if index.odd_at:
            for j, at in enumerate(positions.tolist()):
                odd = index.odd_at.get(at)
                if odd is not None:
                    out[j] = odd
        return out

    def _put(self, key: str, row: _Row | None, sample: int, fields_set: frozenset[str]) -> None:
        self._index.append(key)
        self._samples.append(sample)
        try:
            sid = self._sets.index(fields_set)
        except ValueError:
            sid = len(self._sets)
            self._sets.append(fields_set)
        self._set_ids.append(sid)
        self._open.append(row)
        if len(self._open) == _CHUNK:
            # marshal writes an object met twice in one block once (a shared system prompt)
            self._blocks.append(zlib.compress(marshal.dumps(self._open), 1))
            self._open = []

    def pack(self) -> None:
        """Narrow the key index once the plan is built (adding after it still works)."""
        self._index.pack()

    def _row(self, at: int) -> _Row | None:
        block, offset = divmod(at, _CHUNK)
        if block == len(self._blocks):
            return self._open[offset]
        rows = self._decoded.get(block)
        if rows is None:
            rows = marshal.loads(zlib.decompress(self._blocks[block]))
            if len(self._decoded) >= 4:
                # a new dict, not an eviction: backends may read from several threads,
                # and iterating a dict another thread grows raises
                self._decoded = {}
            self._decoded[block] = rows
        return rows[offset]

    def _request(self, at: int, key: str) -> Request:
        row = self._row(at)
        if row is None:
            return self._whole[at]
        text, pairs, pair, stimulus = row
        # what `Request.model_construct` sets, without its per-field loop
        return rebuilt(Request, {
            "key": key, "kind": self._kind, "text": text, "text_pair": pair,
            "messages": None if pairs is None else [{"role": r, "content": c} for r, c in pairs],
            "params": self._params, "sample": self._samples[at], "stimulus": stimulus},
            self._sets[self._set_ids[at]])

    def __getitem__(self, key: str) -> Request:
        at = self._index.find(key)
        if at < 0:
            raise KeyError(key)
        return self._request(at, key)

    def __contains__(self, key: object) -> bool:
        return self._index.find(key) >= 0

    def __iter__(self) -> Iterator[str]:
        key = self._index.key
        return (key(i) for i in range(self._index.n))

    def __len__(self) -> int:
        return self._index.n

    def values(self) -> ValuesView[Request]:
        return _Values(self)

    def items(self) -> ItemsView[str, Request]:
        return _Items(self)

    def _pairs(self) -> Iterator[tuple[str, Request]]:
        key = self._index.key
        for i in range(self._index.n):
            k = key(i)
            yield k, self._request(i, k)

    def __repr__(self) -> str:
        return f"RequestTable({len(self)} requests)"


class _Values(ValuesView[Request]):
    """The table's requests in order, decoded block by block (no lookup per key)."""

    _mapping: RequestTable

    def __iter__(self) -> Iterator[Request]:
        return (r for _, r in self._mapping._pairs())


class _Items(ItemsView[str, Request]):
    _mapping: RequestTable

    def __iter__(self) -> Iterator[tuple[str, Request]]:
        return self._mapping._pairs()


class PlanItem(NamedTuple):
    """Where a request sits in the design; not part of its hash. A tuple, not a model:
    large plans hold hundreds of thousands of them."""

    cell: str
    stimulus: str
    slot: str
    variant: int
    sample: int
    key: str


# One encoder for every call: json.dumps builds a new encoder per call when given options.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(obj: Any) -> str:
    return _CANONICAL.encode(obj)


def request_key(
    identity: JSONObject,
    kind: str,
    text: str | None,
    messages: list[dict[str, str]] | None,
    params: JSONObject,
    sample: int,
    text_pair: str | None = None,
    stimulus: JSONObject | None = None,
) -> str:
    """Hash of everything that determines the answer, and nothing that does not.

    Batch size, concurrency and timeouts are left out on purpose. The sample index is
    only meaningful for sampled decoding, so deterministic requests share one key.
    """
    payload = {
        "model": identity,
        "kind": kind,
        "text": text,
        "messages": messages,
        "params": params,
        "sample": sample,
    }
    if text_pair is not None:
        payload["text_pair"] = text_pair
    if stimulus is not None:
        payload["stimulus"] = stimulus
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class KeyMaker:
    """`request_key` for many requests of one model, kind and parameter set: the constant
    parts of the canonical JSON are serialised once, the rest spliced in. Gives exactly
    `request_key`'s digest (tested), about three times faster on large plans."""

    def __init__(self, identity: JSONObject, kind: str, params: JSONObject) -> None:
        # canonical_json sorts keys: kind < messages < model < params < sample < text < text_pair
        self._head = '{"kind":' + canonical_json(kind) + ',"messages":'
        self._middle = ',"model":' + canonical_json(identity) + ',"params":' + canonical_json(params) + ',"sample":'

    def __call__(self, text: str | None, messages: list[dict[str, str]] | None, sample: int,
                 text_pair: str | None = None, stimulus: JSONObject | None = None) -> str:
        return self.from_parts(encode_payload(text, messages, text_pair, stimulus), sample)

    def from_parts(self, parts: tuple[str, str], sample: int) -> str:
        """The key of a payload encoded once by `encode_payload` (shared across models)."""
        body = self._head + parts[0] + self._middle + str(sample) + parts[1]
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


def encode_payload(text: str | None, messages: list[dict[str, str]] | None,
                   text_pair: str | None = None, stimulus: JSONObject | None = None) -> tuple[str, str]:
    """The model-independent pieces of a request's canonical JSON."""
    # keys sort: ... sample < stimulus < text < text_pair
    tail = (',"stimulus":' + canonical_json(stimulus) if stimulus is not None else "") + ',"text":' + canonical_json(text)
    if text_pair is not None:
        tail += ',"text_pair":' + canonical_json(text_pair)
    return _messages_json(messages), tail + "}"


_enc = json.encoder.encode_basestring  # the string encoder of ensure_ascii=False (C when built)


def _messages_json(messages: list[dict[str, str]] | None) -> str:
    """`canonical_json(messages)`: for {role, content} messages of text, spliced from
    their encoded strings (the generic encoder was a sixth of the plan stage); tested
    equal on every shipped spec's requests and on odd text (tests/unit/plan)."""
    if messages is None:
        return "null"
    out = []
    for m in messages:
        if len(m) != 2 or type(m.get("role")) is not str or type(m.get("content")) is not str:
            return canonical_json(messages)
        out.append('{"content":' + _enc(m["content"]) + ',"role":' + _enc(m["role"]) + "}")
    return "[" + ",".join(out) + "]"


def sends_stimulus(identity: JSONObject) -> bool:
    """Whether the model of `identity` is sent each request's stimulus (an application's
    request template reads its fields): its identity says so, so that a plan compiled
    and a plan counted (a sweep renders once for many models) key requests alike."""
    return identity.get("sends_stimulus") is True


def stimulus_payload(stimulus_id: str, fields: dict[str, Any], levels: dict[str, str]) -> JSONObject:
    """The `Request.stimulus` of one plan row, as JSON (level vars come from YAML)."""
    loaded: JSONObject = json.loads(json.dumps({"id": stimulus_id, "fields": fields, "levels": levels},
                                               sort_keys=True, default=str))
    return loaded


def estimated_tokens(request: Request) -> tuple[int, int]:
    """(input, output) tokens of one request, as characters / 4 before any tokenizer loads;
    output is `max_tokens` for generation (an upper bound), 1 for a next-token read."""
    chars = len(request.text or "") + len(request.text_pair or "") + sum(
        len(m["content"]) for m in request.messages or [])
    if request.kind == "generate":
        out = request.decoding().max_tokens or 0
    else:
        out = 1 if request.kind in ("next_token", "choice") else 0
    return max(1, chars // 4), out
