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

from pydantic import BeforeValidator, JsonValue, TypeAdapter
from pydantic_core import to_jsonable_python

JSONValue: TypeAlias = JsonValue
JSONObject: TypeAlias = dict[str, JsonValue]


def jsonable(value: object) -> object:
    """`value` in its JSON form, as a dump in JSON mode has always written an open field
    (`Any`): tuples and sets as lists, enums as their values, models as objects, paths as
    text, NaN and infinities as null. A value with no JSON form is refused.

    Done when the record is built because a `JsonValue` field dumps a NaN as NaN, which
    summary.json and compare.json (written with `allow_nan=False`) refuse."""
    return to_jsonable_python(value, inf_nan_mode="null")


DumpedJSONObject: TypeAlias = Annotated[JSONObject, BeforeValidator(jsonable)]
"""A JSON object that may be given as Python values with a JSON form (a parameter model's
`model_dump()`, the composed configuration): they are turned into that form when the
record is built, so what the record holds is what its file will hold."""

_OBJECT: TypeAdapter[JSONObject] = TypeAdapter(DumpedJSONObject)


def json_object(value: Mapping[str, object]) -> JSONObject:
    """A mapping of Python values (a TypedDict of numbers, a model's dump) as a checked JSON object."""
    return _OBJECT.validate_python(value)


__all__ = ["DumpedJSONObject", "JSONObject", "JSONValue", "json_object", "jsonable"]
