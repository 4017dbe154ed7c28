"""One generic registry for every named, pluggable thing (adapters, metrics, backends...).

Specs name registered things; they never carry import paths. Lookups of unknown names
fail with a "did you mean" suggestion.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from .errors import SpecError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._items[name] = obj
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        self.register(name)(obj)

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def suggest(self, name: str) -> str:
        close = difflib.get_close_matches(name, self.names(), n=1)
        if close:
            return f"did you mean {close[0]!r}? known: {', '.join(self.names())}"
        return f"known: {', '.join(self.names())}"

    def get(self, name: str, *, file: str | None = None, key: str | None = None) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise SpecError(
                f"unknown {self.kind} {name!r}", file=file, key=key, hint=self.suggest(name)
            ) from None
