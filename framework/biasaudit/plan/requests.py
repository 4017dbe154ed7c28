"""Requests (one model call each), plan items, and the content hash that keys the cache."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

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

    @model_serializer(mode="wrap")
    def _no_unset_stimulus(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # requests of every other backend are stored and written byte for byte as before
        out: dict[str, Any] = handler(self)
        if self.stimulus is None:
            out.pop("stimulus", None)
        return out


_Message = tuple[str, str]
_RequestRow = tuple[str | None, tuple[_Message, ...] | None, int, str | None, JSONObject | None, frozenset[str]]


class RequestTable(Mapping[str, Request]):
    """Key -> request of a plan, held compactly (issue 42): a plan's requests share their
    kind and decoding parameters, so each is kept as a tuple of what differs (its text,
    its messages as (role, content) pairs, its sample, text pair and stimulus), and the
    system messages that many requests repeat are held once. A `Request` with its
    messages' dicts is about 1.9 KB; its row about a third of that. Reading a key gives a
    `Request` equal to the one added, built on each access (its `params` is the table's one
    object: requests are frozen, nobody writes to it). A request of another kind or
    parameter set, or with messages of other keys, is kept whole."""

    __slots__ = ("_kind", "_params", "_rows", "_shared", "_sets")

    def __init__(self, kind: str, params: JSONObject) -> None:
        self._kind = kind
        self._params = params
        self._rows: dict[str, _RequestRow | Request] = {}
        self._shared: dict[str, str] = {}
        self._sets: dict[frozenset[str], frozenset[str]] = {}

    def add(self, req: Request) -> None:
        """Keep `req` under its key unless one is there already (`dict.setdefault`)."""
        if req.key in self._rows:
            return
        d = req.__dict__
        msgs = d["messages"]
        pairs: tuple[_Message, ...] | None = None
        if msgs is not None:
            if not all(len(m) == 2 and list(m) == ["role", "content"] for m in msgs):
                self._rows[req.key] = req
                return
            # every message but the last (the user's, unique to the request) is shared text
            pairs = tuple((m["role"], self._shared.setdefault(m["content"], m["content"]) if i < len(msgs) - 1
                           else m["content"]) for i, m in enumerate(msgs))
        if d["kind"] != self._kind or d["params"] != self._params:
            self._rows[req.key] = req
            return
        fs = frozenset(req.model_fields_set)
        self._rows[req.key] = (d["text"], pairs, d["sample"], d["text_pair"], d["stimulus"],
                               self._sets.setdefault(fs, fs))

    def __getitem__(self, key: str) -> Request:
        row = self._rows[key]
        if isinstance(row, Request):
            return row
        text, pairs, sample, pair, stimulus, fs = row
        # what `Request.model_construct` sets, without its per-field loop
        return rebuilt(Request, {
            "key": key, "kind": self._kind, "text": text, "text_pair": pair,
            "messages": None if pairs is None else [{"role": r, "content": c} for r, c in pairs],
            "params": self._params, "sample": sample, "stimulus": stimulus}, fs)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return f"RequestTable({len(self._rows)} requests)"


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
    return canonical_json(messages), tail + "}"


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
