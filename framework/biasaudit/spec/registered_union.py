"""A config union assembled from a registry when a config is validated: the member a
config's `backend` key names, with that class's own fields and errors, as a member of a
discriminated union (so a plug-in kind needs no edit here, and error locations carry the
tag as a written union's do). `ModelConfig` (backends), `NLIConfig` (NLI classifiers) and
`EmbedderConfig` (embedders) are each one of these over their registry."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema


def tag_of(cls: type[BaseModel]) -> str:
    """The `backend` value that selects `cls`."""
    return str(cls.model_fields["backend"].annotation.__args__[0])  # type: ignore[union-attr]


@functools.lru_cache(maxsize=32)
def union_adapter(configs: tuple[type[BaseModel], ...]) -> TypeAdapter[Any]:
    """The discriminated union of `configs` (cached per member set: rebuilt when a kind registers)."""
    union: Any = Annotated[Union[configs], Field(discriminator="backend")]  # noqa: UP007 (a runtime tuple)
    return TypeAdapter(union)


class RegisteredUnion:
    """The validator of a registry-built union: `members` reads the registered config
    models when a config is validated; `default` names the kind a mapping without a
    `backend` key selects (None: the key is required)."""

    def __init__(self, members: Callable[[], tuple[type[BaseModel], ...]],
                 default: Callable[[], str | None] | None = None) -> None:
        self._members = members
        self._default = default

    def members(self) -> tuple[type[BaseModel], ...]:
        """The union's members (`spec.errors_format` reads the tags from them)."""
        return self._members()

    def adapter(self) -> TypeAdapter[Any]:
        return union_adapter(self.members())

    def validate(self, value: Any) -> Any:
        if isinstance(value, dict) and "backend" not in value and self._default is not None:
            default = self._default()
            if default is not None:
                value = {"backend": default, **value}
        return self.adapter().validate_python(value)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(self.validate)

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return handler(self.adapter().core_schema)


__all__ = ["RegisteredUnion", "tag_of", "union_adapter"]
