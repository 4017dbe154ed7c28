"""What a coding layer reads and says: the unit (one answered plan item) and its code. Data only."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

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
_CODE_SETS: dict[frozenset[str], frozenset[str]] = {}


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
    fs = frozenset(("unit", "status", "detail", *fields))
    values: dict[str, object] = {"unit": unit, "status": status, **_CODE_DEFAULTS, **fields, "detail": detail}
    if len(values) != 7:  # a field Code does not have
        raise TypeError(f"new_code: unknown field(s) {sorted(set(values) - set(Code.model_fields))}")
    return rebuilt(Code, values, _CODE_SETS.setdefault(fs, fs))


_CodeRow = tuple[CodeStatus, str | None, float | None, str | None, str, CodeDetail, frozenset[str]]
_FIELD_SETS: dict[frozenset[str], frozenset[str]] = {}


class CodeTable(Mapping[str, Code]):
    """Unit id -> code of one layer, held as one tuple per unit instead of one pydantic
    record (issue 42: a `Code` with its `__dict__` and fields set is about 1 KB, its
    tuple about 100 bytes, and a run holds one per unit and layer until the report is
    written). Reading a unit gives back a `Code` equal to the one added (the same values,
    the same evidence record, the same fields set), built on each access; iteration order
    is the order codes were added, as a dict's."""

    __slots__ = ("_rows",)

    def __init__(self, codes: Mapping[str, Code] | None = None) -> None:
        self._rows: dict[str, _CodeRow | Code] = {}
        for uid, c in (codes or {}).items():
            self[uid] = c

    def __setitem__(self, uid: str, code: Code) -> None:
        if code.unit != uid:  # keyed apart from its unit (no shipped stage does): kept whole
            self._rows[uid] = code
            return
        fs = frozenset(code.model_fields_set)
        d = code.__dict__
        self._rows[uid] = (d["status"], d["label"], d["value"], d["text"], d["source"], d["detail"],
                           _FIELD_SETS.setdefault(fs, fs))

    def put_from(self, other: CodeTable, uid: str) -> None:
        """Keep `other`'s code of `uid` here too, as it is held (no record built)."""
        self._rows[uid] = other._rows[uid]

    def __getitem__(self, uid: str) -> Code:
        row = self._rows[uid]
        if isinstance(row, Code):
            return row
        status, label, value, text, source, detail, fs = row
        # what `Code.model_construct` sets, without its per-field loop (several times faster:
        # metrics and reports read every code more than once)
        return rebuilt(Code, {"unit": uid, "status": status, "label": label, "value": value, "text": text,
                              "source": source, "detail": detail}, fs)

    def __contains__(self, uid: object) -> bool:
        return uid in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return f"CodeTable({len(self._rows)} codes)"
