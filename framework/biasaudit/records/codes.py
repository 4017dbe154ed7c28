"""What a coding layer reads and says: the unit (one answered plan item) and its code. Data only."""

from __future__ import annotations

import importlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, cast, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails

from biasaudit.records.construct import rebuilt
from biasaudit.records.json import JSONObject, JSONValue

ABSTAIN = "Abstain"
"""The label shown for a unit a layer could not code."""


CodeStatus = Literal["coded", "abstain", "not_applicable", "failed"]
"""`coded`: a label or value; `abstain`: the coder ran and could not decide (no rule
fired, no judge majority); `not_applicable`: the layer does not apply to this unit (a
task without a selection layer, an answer too short to compare); `failed`: the subject's
response or a coding request failed."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One answered plan item: what a layer codes. Slotted: a run holds one per plan item
    (no per-instance `__dict__`, about 200 bytes less each; issue 42)."""

    id: str
    cell: str
    stimulus: str
    slot: str
    variant: int
    sample: int
    key: str
    """The subject request's key (its response is `responses[key]`)."""
    levels: Mapping[str, str]
    """Factor -> level of the unit's cell."""
    fields: Mapping[str, JSONValue]
    """The stimulus's fields (the dataset's own columns: JSON values)."""
    vars: Mapping[str, JSONValue]
    """Variables the cell's levels set."""

    def context(self, **extra: JSONValue) -> JSONObject:
        """Template variables for rubrics and prompts: stimulus fields, level vars, levels."""
        levels: JSONObject = dict(self.levels)
        return {**self.fields, **self.vars, "levels": levels, "stimulus_id": self.stimulus, **extra}


class UnitSource(Protocol):
    """Where a unit sits in the design (a plan item: `plan.PlanItem`)."""

    @property
    def cell(self) -> str: ...
    @property
    def stimulus(self) -> str: ...
    @property
    def slot(self) -> str: ...
    @property
    def variant(self) -> int: ...
    @property
    def sample(self) -> int: ...
    @property
    def key(self) -> str: ...


def unit_id(it: UnitSource) -> str:
    """A unit's id: `cell|stimulus|slot|variant|sample` of its plan item."""
    return f"{it.cell}|{it.stimulus}|{it.slot}|{it.variant}|{it.sample}"


class UnitTable(Sequence[Unit]):
    """The units of a run, one per plan item, as the plan's own items: nothing is held per
    unit beyond what the plan holds already, and each read builds its `Unit` (equal to
    the one a list would have held: the same id, the same shared level, field and var
    mappings). A run held a `Unit` of about 100 bytes per plan item from coding to the
    end of the report (issue 42)."""

    __slots__ = ("_cells", "_fields", "_items", "_vars")

    def __init__(self, items: Sequence[UnitSource], cells: Mapping[str, Mapping[str, str]],
                 fields: Mapping[str, Mapping[str, JSONValue]], cell_vars: Mapping[str, Mapping[str, JSONValue]]) -> None:
        self._items, self._cells, self._fields, self._vars = items, cells, fields, cell_vars

    def _unit(self, it: UnitSource) -> Unit:
        c = it.cell
        return Unit(id=unit_id(it), cell=c, stimulus=it.stimulus, slot=it.slot, variant=it.variant,
                    sample=it.sample, key=it.key, levels=self._cells[c], fields=self._fields[it.stimulus],
                    vars=self._vars[c])

    @overload
    def __getitem__(self, i: int) -> Unit: ...
    @overload
    def __getitem__(self, i: slice) -> list[Unit]: ...

    def __getitem__(self, i: int | slice) -> Unit | list[Unit]:
        if isinstance(i, slice):
            return [self._unit(it) for it in self._items[i]]
        return self._unit(self._items[i])

    def __iter__(self) -> Iterator[Unit]:
        unit = self._unit
        for it in self._items:
            yield unit(it)

    def __len__(self) -> int:
        return len(self._items)

    def id_at(self, i: int) -> str:
        # a plan's item table gives the id's parts without building the item and its key
        parts = getattr(self._items, "parts_at", None)
        if parts is not None:
            cell, stimulus, slot, variant, sample = parts(i)
            return f"{cell}|{stimulus}|{slot}|{variant}|{sample}"
        return unit_id(self._items[i])

    def ids(self) -> Iterator[str]:
        """Each unit's id, in order, without building the units."""
        for it in self._items:
            yield unit_id(it)

    def __repr__(self) -> str:
        return f"UnitTable({len(self)} units)"


class Truncation(BaseModel):
    """An input cut to `runtime.limits.max_coding_chars` before the coder read it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    chars: int
    """The input's full length."""
    kept: int
    """The characters the coder read."""


_BASE_KEYS = ("reason", "input_truncated")


class CodeDetail(BaseModel):
    """A coder's evidence for one code: what it matched, what each judge said, which
    claims it checked, or why it could not code. This base holds only what any code may
    carry (`reason`, and `input_truncated`, set by the coding stage); each coder declares
    its own evidence record as a subclass (`CoderDef.evidence`), which refuses unknown
    keys, and the record a stored line is read into is the one its coder registered
    (`Code.source`, resolved through the registry).

    Serialised (codes.jsonl, the viewer, the evidence pack) as the fields a coder set and
    nothing else: the coder's own fields in the order its record declares them, then
    `reason`, then `input_truncated`, so a line reads byte for byte as it did when
    `detail` was a plain mapping (`{"span": [0, 3], "token": "A", "rule": 1}`,
    `{"votes": {...}}`, `{}`). A field explicitly set to null (`stratify` of an
    unstratified sheet) is kept. An unknown key is refused: a line this version did not
    write (records/upgrade/codes.py reads the older layouts)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trail_exclude: ClassVar[frozenset[str]] = frozenset()
    """Fields kept in memory for a metric but left out of codes.jsonl (too large to show)."""

    reason: str | None = None
    """Why the unit was not coded (not applicable, abstained or failed)."""
    input_truncated: Truncation | None = None
    """The input was cut before the coder read it (set by the coding stage)."""

    @model_serializer(mode="wrap")
    def _set_fields_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # (the return type tells pydantic how to serialise what this returns: `object`
        # leaves the handler's values as they are, python tuples included)
        out: dict[str, object] = handler(self)
        own = {k: v for k, v in out.items() if k in self.model_fields_set and k not in _BASE_KEYS}
        own.update((k, out[k]) for k in _BASE_KEYS if k in out and k in self.model_fields_set)
        return own

    def has(self, name: str) -> bool:
        """The coder set this field (even to null), or the file read had this key."""
        return name in self.model_fields_set

    def matched_span(self) -> tuple[int, int] | None:
        """The character span this code matched in its input, which a later layer's
        `strip` removes (None: the coder matches no span)."""
        return None

    def rater_votes(self) -> Mapping[str, str | None] | None:
        """Rater name -> its label, for coders that pool several raters (None: one rater).
        Calibration, self-tests and the gold report score each rater from this."""
        return None

    def trail(self) -> dict[str, object]:
        """The record as codes.jsonl writes it (without `trail_exclude`)."""
        out: dict[str, object] = self.model_dump(mode="json", exclude=set(self.trail_exclude))
        return out


EvidenceResolver = Callable[[str, frozenset[str]], type[CodeDetail]]
"""(the code's source, the detail's keys) -> the evidence record to read them into."""
_resolver: list[EvidenceResolver] = []


def set_evidence_resolver(resolve: EvidenceResolver) -> None:
    """Install how a stored detail finds its coder's record (the registry does, on import)."""
    _resolver[:] = [resolve]


def evidence_model(source: str, keys: frozenset[str]) -> type[CodeDetail]:
    """The evidence record a stored detail with these keys, written by `source`, reads into."""
    if keys <= frozenset(_BASE_KEYS):
        return CodeDetail
    if not _resolver:  # the registry installs the resolver when it is imported
        importlib.import_module("biasaudit.registry")
    return _resolver[0](source, keys) if _resolver else CodeDetail


def _under_detail(e: ErrorDetails) -> InitErrorDetails:
    out = InitErrorDetails(type=e["type"], loc=("detail", *e["loc"]), input=e["input"])
    if "ctx" in e:
        out["ctx"] = e["ctx"]
    return out


class Code(BaseModel):
    """What a layer says about one unit."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    unit: str
    status: CodeStatus
    label: str | None = None
    """A label of the layer's label set (status `coded`, label layers)."""
    value: float | None = None
    """A number (status `coded`, value layers such as similarities or mean ratings)."""
    text: str | None = None
    """The text the layer read after its own preprocessing (masking), when later layers
    take this layer as their input."""
    source: str = ""
    """Which coder gave the code (`rules`, `fallback:<layer>`...)."""
    detail: SerializeAsAny[CodeDetail] = Field(default_factory=CodeDetail)
    """Coder-specific evidence (the coder's own record): the matched span, each judge's
    vote, the checked claims."""

    @model_validator(mode="before")
    @classmethod
    def _typed_detail(cls, data: object) -> object:
        # a stored line's detail is a mapping: read it into its coder's evidence record
        if isinstance(data, Mapping) and isinstance(data.get("detail"), Mapping):
            raw = data["detail"]
            model = evidence_model(str(data.get("source") or ""), frozenset(str(k) for k in raw))
            try:
                return {**data, "detail": model.model_validate(raw)}
            except ValidationError as exc:  # say where: `detail.<key>`, as a plain field's error would
                raise ValidationError.from_exception_data(cls.__name__, [_under_detail(e) for e in exc.errors()]) from None
        return data

    def trail(self) -> dict[str, object]:
        """The code as a codes.jsonl line writes it (the detail without its in-memory-only fields)."""
        out: dict[str, object] = self.model_dump(mode="json", exclude={"detail"})
        out["detail"] = self.detail.trail()
        return out

    @property
    def coded(self) -> bool:
        return self.status == "coded"


_CODE_DEFAULTS: dict[str, object] = {"label": None, "value": None, "text": None, "source": ""}
_CODE_SETS: dict[tuple[str, ...], frozenset[str]] = {}  # new_code's field names -> the fields set


def new_code(unit: str, status: CodeStatus, detail: CodeDetail, **fields: str | float | None) -> Code:
    """`Code(unit=..., status=..., detail=..., **fields)` for a coder that builds one per
    unit from values already of the fields' types (a label `str`, a `float` value, the
    coder's own evidence record): the same record, with the same fields set, without
    pydantic's validation of every field (issue 42: a rules or choice coder spent most of
    its few microseconds per unit there). A value of another type (an `int`) is refused
    here rather than stored unconverted."""
    value = fields.get("value")
    if value is not None and type(value) is not float:
        raise TypeError(f"new_code: value must be a float, not {type(value).__name__}")
    if not isinstance(detail, CodeDetail):
        raise TypeError("new_code: detail must be a CodeDetail record")
    names = tuple(fields)
    fs = _CODE_SETS.get(names)  # (a coder passes the same few field names for every unit)
    if fs is None:
        if not set(names) <= _CODE_DEFAULTS.keys():  # a field Code does not have
            raise TypeError(f"new_code: unknown field(s) {sorted(set(names) - set(Code.model_fields))}")
        fs = _CODE_SETS[names] = frozenset(("unit", "status", "detail", *names))
    return rebuilt(Code, {"unit": unit, "status": status, **_CODE_DEFAULTS, **fields, "detail": detail}, fs)


CodeFields = tuple[str, CodeStatus, str | None, float | None, str | None, str, CodeDetail]
"""A code's field values in `Code`'s order (`CodeTable.fields`)."""
_STATUSES: tuple[CodeStatus, ...] = ("coded", "abstain", "not_applicable", "failed")
_STATUS_AT = {st: i for i, st in enumerate(_STATUSES)}
_NO_VALUE, _FLOAT, _OTHER = 0, 1, 2  # what a row's value is: None, a float in `_value`, another object kept aside


class UnitIndex:
    """Unit id -> its position, shared by the code tables of one coding run: a table keyed
    by these units holds 4 bytes per code for where it is, not a dict entry and an int
    each (issue 42). Only grows: a table given a unit it does not know adds it."""

    __slots__ = ("ids", "pos")

    def __init__(self, ids: Iterable[str] = ()) -> None:
        self.pos: dict[str, int] = {}
        self.ids: list[str] = []
        for uid in ids:
            self.add(uid)

    def at(self, uid: str) -> int | None:
        """The unit's position (None: not in the index)."""
        return self.pos.get(uid)

    def add(self, uid: str) -> int:
        at = self.pos.get(uid)
        if at is None:
            at = self.pos[uid] = len(self.ids)
            self.ids.append(uid)
        return at

    def id_at(self, at: int) -> str:
        return self.ids[at]

    def __len__(self) -> int:
        return len(self.ids)


class PlanUnitIndex(UnitIndex):
    """A `UnitIndex` of the units of a `UnitTable` that holds no id: position k is the
    table's unit k, whose id is built from its plan item when it is read, and an id is
    found through an open-addressing table of (the id's hash, its position) in two
    arrays, 12 bytes a slot at most half full, checked against the id built at that
    position (a hash match alone is never taken). The dict of a plain `UnitIndex` held
    each unit's id string, an int and an entry: about 170 bytes a unit for the whole run
    (issue 42). A unit added that the table does not hold is kept as a plain index
    keeps it, after the table's."""

    __slots__ = ("_hash", "_mask", "_n", "_slot", "_units")

    def __init__(self, units: UnitTable) -> None:
        super().__init__()
        self._units = units
        self._n = n = len(units)
        size = 8
        while size < 2 * n:
            size *= 2
        self._mask = mask = size - 1
        self._slot = slot = array("i", [-1]) * size
        self._hash = hashes = array("q", [0]) * size
        for k, uid in enumerate(units.ids()):
            h = hash(uid)
            j = h & mask
            while (other := slot[j]) >= 0:
                if hashes[j] == h and units.id_at(other) == uid:
                    raise ValueError(f"unit {uid!r} appears twice in the plan")
                j = (j + 1) & mask
            slot[j], hashes[j] = k, h

    def at(self, uid: str) -> int | None:
        h = hash(uid)
        mask, slot, hashes = self._mask, self._slot, self._hash
        j = h & mask
        while (k := slot[j]) >= 0:
            if hashes[j] == h and self._units.id_at(k) == uid:
                return k
            j = (j + 1) & mask
        at = self.pos.get(uid)
        return None if at is None else self._n + at

    def add(self, uid: str) -> int:
        at = self.at(uid)
        return at if at is not None else self._n + super().add(uid)

    def id_at(self, at: int) -> str:
        return self._units.id_at(at) if at < self._n else self.ids[at - self._n]

    def __len__(self) -> int:
        return self._n + len(self.ids)


class CodeTable(Mapping[str, Code]):
    """Unit id -> code of one layer, held as columns instead of one pydantic record per
    unit (issue 42: a `Code` with its `__dict__` and fields set is about 1 KB, and a run
    holds one per unit and layer until the report is written). Per code: the row of its
    unit (a position in a `UnitIndex`, shared by the tables of one run), its status (1
    byte), its label (the index of an interned string, 4 bytes), its value (8 bytes and a
    flag byte), its source and fields set (1-2 bytes each, interned) and its evidence
    record (a reference: coders share equal records); a `text` is kept only where there is
    one. Reading a unit gives back a `Code` equal to the one added (the same values, the
    same evidence record, the same fields set), built on each access; iteration order is
    the order codes were added, as a dict's (a code added again keeps its place; a code
    keyed apart from its own unit, which no shipped stage adds, is kept whole and comes
    after the others)."""

    __slots__ = ("_detail", "_fset", "_fsets", "_index", "_interned", "_label", "_labels", "_odd", "_pos",
                 "_row_of", "_source", "_sources", "_status", "_text", "_value", "_vkind", "_whole")

    def __init__(self, codes: Mapping[str, Code] | None = None, *, index: UnitIndex | None = None) -> None:
        self._index = index if index is not None else UnitIndex()
        self._row_of = array("i")  # index position -> row (-1: no code here), grown on demand
        self._pos = array("i")  # row -> index position
        self._status = bytearray()
        self._label = array("I")  # 0: None; k: self._labels[k]
        self._labels: list[str | None] = [None]
        self._value = array("d")
        self._vkind = bytearray()
        self._source = array("H")
        self._sources: list[str] = []
        self._fset = array("H")
        self._fsets: list[frozenset[str]] = []
        self._interned: dict[tuple[str, object], int] = {}  # ("label"|"source"|"fs", value) -> its index
        self._detail: list[CodeDetail] = []
        self._text: dict[int, str] = {}  # row -> text, only rows that have one
        self._odd: dict[int, object] = {}  # row -> a value that is not a float (kept as given)
        self._whole: dict[str, Code] = {}  # codes keyed apart from their unit (no shipped stage does): kept whole
        for uid, c in (codes or {}).items():
            self[uid] = c

    def _intern(self, kind: str, value: object, into: list[Any]) -> int:
        key = (kind, value)
        at = self._interned.get(key)
        if at is None:
            at = self._interned[key] = len(into)
            into.append(value)
        return at

    def _row(self, uid: object) -> int:
        at = self._index.at(uid) if isinstance(uid, str) else None
        if at is None or at >= len(self._row_of):
            return -1
        return self._row_of[at]

    def __setitem__(self, uid: str, code: Code) -> None:
        d = code.__dict__
        if d["unit"] != uid:
            if self._row(uid) >= 0:
                raise ValueError(f"unit {uid!r} already holds a code keyed by its unit")
            self._whole[uid] = code
            return
        if self._whole:
            self._whole.pop(uid, None)
        label, value, text = d["label"], d["value"], d["text"]
        interned = self._interned
        lab = 0 if label is None else interned.get(("label", label))
        if lab is None:
            lab = self._intern("label", label, self._labels)
        src = interned.get(("source", d["source"]))
        if src is None:
            src = self._intern("source", d["source"], self._sources)
        fs_key = ("fs", frozenset(code.model_fields_set))
        fs = interned.get(fs_key)
        if fs is None:
            fs = self._intern("fs", fs_key[1], self._fsets)
        vkind = _NO_VALUE if value is None else _FLOAT if type(value) is float else _OTHER
        self._put(uid, _STATUS_AT[d["status"]], lab, vkind, value, text, src, fs, d["detail"])

    def _put(self, uid: str, status: int, label: int, vkind: int, value: object, text: str | None, source: int,
             fset: int, detail: CodeDetail) -> None:
        """Set `uid`'s row (a new row at the end, or its own row again) from column values."""
        at = self._index.at(uid)
        if at is None:
            at = self._index.add(uid)
        row_of = self._row_of
        if at >= len(row_of):
            row_of.extend(array("i", [-1]) * (max(len(self._index), 2 * len(row_of)) - len(row_of)))
        row = row_of[at]
        fval = cast(float, value) if vkind == _FLOAT else 0.0
        if row < 0:
            row = row_of[at] = len(self._pos)
            self._pos.append(at)
            self._status.append(status)
            self._label.append(label)
            self._value.append(fval)
            self._vkind.append(vkind)
            self._source.append(source)
            self._fset.append(fset)
            self._detail.append(detail)
        else:
            self._status[row] = status
            self._label[row] = label
            self._value[row] = fval
            self._vkind[row] = vkind
            self._source[row] = source
            self._fset[row] = fset
            self._detail[row] = detail
            self._odd.pop(row, None)
            self._text.pop(row, None)
        if vkind == _OTHER:
            self._odd[row] = value
        if text is not None:
            self._text[row] = text

    def put_from(self, other: CodeTable, uid: str) -> None:
        """Keep `other`'s code of `uid` here too (its columns copied, no record built)."""
        row = other._row(uid)
        if row < 0:
            self[uid] = other[uid]
            return
        label, source, fset = other._labels[other._label[row]], other._sources[other._source[row]], \
            other._fsets[other._fset[row]]
        lab = 0 if label is None else self._intern("label", label, self._labels)
        vkind = other._vkind[row]
        value = other._value[row] if vkind == _FLOAT else other._odd.get(row)
        if self._whole:
            self._whole.pop(uid, None)
        self._put(uid, other._status[row], lab, vkind, value, other._text.get(row),
                  self._intern("source", source, self._sources), self._intern("fs", fset, self._fsets),
                  other._detail[row])

    def status_of(self, uid: str) -> CodeStatus:
        """`self[uid].status`, without building the record."""
        row = self._row(uid)
        return self._whole[uid].status if row < 0 else _STATUSES[self._status[row]]

    def __getitem__(self, uid: str) -> Code:
        row = self._row(uid)
        if row < 0:
            return self._whole[uid]
        kind = self._vkind[row]
        value = None if kind == _NO_VALUE else self._value[row] if kind == _FLOAT else self._odd[row]
        # what `Code.model_construct` sets, without its per-field loop (several times faster:
        # metrics and reports read every code more than once)
        return rebuilt(Code, {"unit": self._index.id_at(self._pos[row]), "status": _STATUSES[self._status[row]],
                              "label": self._labels[self._label[row]], "value": value,
                              "text": self._text.get(row), "source": self._sources[self._source[row]],
                              "detail": self._detail[row]}, self._fsets[self._fset[row]])

    def fields(self) -> Iterator[CodeFields | Code]:
        """Each code in iteration order as the values of its fields (unit, status, label,
        value, text, source, detail: what `self[uid].__dict__` holds, in that order),
        without building the record (a trail writer reads every code once); a code whose
        value is not a float, or one kept whole, as its record."""
        id_at, pos, status, label, labels = self._index.id_at, self._pos, self._status, self._label, self._labels
        value, vkind, source, sources, detail, text = \
            self._value, self._vkind, self._source, self._sources, self._detail, self._text
        for row in range(len(pos)):
            kind = vkind[row]
            if kind == _OTHER:
                yield self[id_at(pos[row])]
                continue
            yield (id_at(pos[row]), _STATUSES[status[row]], labels[label[row]],
                   None if kind == _NO_VALUE else value[row], text.get(row) if text else None,
                   sources[source[row]], detail[row])
        yield from self._whole.values()

    def __contains__(self, uid: object) -> bool:
        return self._row(uid) >= 0 or uid in self._whole

    def __iter__(self) -> Iterator[str]:
        id_at, pos = self._index.id_at, self._pos
        for row in range(len(pos)):
            yield id_at(pos[row])
        yield from self._whole

    def __len__(self) -> int:
        return len(self._pos) + len(self._whole)

    def __repr__(self) -> str:
        return f"CodeTable({len(self)} codes)"
