"""A pydantic record rebuilt from values that were validated when they were stored: the
compact tables (plan/requests.RequestTable, records/responses.ResponseTable,
records/codes.CodeTable) hand out records on every read, and metrics and reports read
every record more than once."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def rebuilt(cls: type[M], values: dict[str, object], fields_set: frozenset[str]) -> M:
    """What `cls.model_construct(**values)` gives, with its fields-set, without its
    per-field loop (several times faster); `values` must hold every field, already valid."""
    obj = cls.__new__(cls)
    _set(obj, "__dict__", values)
    _set(obj, "__pydantic_fields_set__", set(fields_set))
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj
