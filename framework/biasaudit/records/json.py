"""JSON documents that cross a stage boundary without a fixed shape of their own.

Most records between stages have typed fields. A few values are open by nature: the
composed configuration kept in the manifest (re-validated as `AuditConfig` when read), a
dataset's own columns (`Stimulus.fields`: the auditor's file decides them), the settings
that make up a model's identity (each backend its own), a metric's parameters echoed into
its result. They are typed as JSON (`JSONObject`): strings, numbers, booleans, null, lists
and objects of those, checked by pydantic when a record is built or read, rather than
`dict[str, Any]`, which would let any Python object through unseen.
"""

from __future__ import annotations

from typing import TypeAlias

from pydantic import JsonValue

JSONValue: TypeAlias = JsonValue
JSONObject: TypeAlias = dict[str, JsonValue]


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


__all__ = ["JSONObject", "JSONValue", "json_int", "json_list"]
