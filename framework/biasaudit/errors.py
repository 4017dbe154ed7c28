"""Errors a user can cause, shown by the CLI as one line with a hint (exit code 2).

Bugs are not wrapped: they keep their traceback.
"""

from __future__ import annotations


class BiasAuditError(Exception):
    """A problem with the user's input or environment, with where it is and how to fix it."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.key = key
        self.hint = hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.file and self.key:
            where = f"{self.file}: {self.key}: "
        elif self.file:
            where = f"{self.file}: "
        elif self.key:
            where = f"{self.key}: "
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"error: {where}{self.message}{hint}"


class SpecError(BiasAuditError):
    """The audit spec or the composed configuration is invalid."""


class DataError(BiasAuditError):
    """A stimulus file is missing or malformed."""


class BackendError(BiasAuditError):
    """A backend cannot be built or cannot do what the spec asks."""


class StoreError(BiasAuditError):
    """The store is missing something that a re-render needs."""
