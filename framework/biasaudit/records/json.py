"""JSON documents that cross a stage boundary without a fixed shape of their own.

Most records between stages have typed fields. A few values are open by nature: the
composed configuration kept in the manifest (re-validated as `AuditConfig` when read), a
dataset's own columns (`Stimulus.fields`: the auditor's file decides them), the settings
that make up a model's identity (each backend its own), a metric's parameters echoed into
its result, a method's cross-run analysis numbers, a report table's cells. They are typed
as JSON (`JSONObject`): strings, numbers, booleans, null, lists and objects of those,
checked by pydantic when a record is built or read, rather than `dict[str, Any]`, which
would let any Python object through unseen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, TypeAlias

from pydantic import BeforeValidator, JsonValue, PlainSerializer, TypeAdapter
from pydantic_core import to_jsonable_python

JSONValue: TypeAlias = JsonValue
JSONObject: TypeAlias = dict[str, JsonValue]


def jsonable(value: object) -> object:
    """`value` in its JSON form: tuples and sets as lists, enums as their values, models as
    objects, paths as text. NaN and infinities stay floats here (a summary.json edited by
    hand to hold one is still found and refused where it is read); they are written as
    null. A value with no JSON form is refused."""
    return to_jsonable_python(value)


def _null_for_nan(value: object) -> object:
    return to_jsonable_python(value, inf_nan_mode="null")


AS_JSON = BeforeValidator(jsonable)
"""A field's value is taken in its JSON form when the record is built (`jsonable`)."""
NAN_AS_NULL = PlainSerializer(_null_for_nan, when_used="json")
"""A NaN or infinity is dumped as null in JSON mode, as an `Any` field always dumped it
(a `JsonValue` field would write NaN, which summary.json and compare.json refuse)."""

DumpedJSONObject: TypeAlias = Annotated[JSONObject, AS_JSON, NAN_AS_NULL]
"""A JSON object that may be given as Python values with a JSON form (a parameter model's
`model_dump()`, the composed configuration): they are turned into that form when the
record is built, so what the record holds is what its file will hold."""

_OBJECT: TypeAdapter[JSONObject] = TypeAdapter(DumpedJSONObject)


def json_object(value: Mapping[str, object]) -> JSONObject:
    """A mapping of Python values (a TypedDict of numbers, a model's dump) as a checked JSON object."""
    return _OBJECT.validate_python(value)


def json_int(value: JSONValue) -> int:
    """The integer a JSON value holds, as `int()` reads it (a number, or a CSV cell's
    digits); TypeError for a list, an object or null, as `int()` would raise."""
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"expected a number, got {type(value).__name__}")


def json_list(value: JSONValue) -> list[JSONValue]:
    """A JSON value that must be a list; TypeError otherwise."""
    if isinstance(value, list):
        return value
    raise TypeError(f"expected a list, got {type(value).__name__}")


__all__ = ["AS_JSON", "NAN_AS_NULL", "DumpedJSONObject", "JSONObject", "JSONValue", "json_int", "json_list", "json_object",
           "jsonable"]
