"""The one upgrade path: every file biasaudit writes for later reading carries its layout's
version, and this package reads every earlier version into today's layout.

Each kind of file has a module `records/upgrade/<kind>.py` (found here by name, so a kind
is added by adding its module, nothing else) defining

- `CURRENT: int`, the version this biasaudit writes, and
- `STEPS: dict[int, Callable[[dict], dict]]`, where step k turns a raw record of version
  k into one of version k+1 (a pure function of the raw JSON: it never reads a file),

and optionally `version_of(raw) -> int` where a kind does not keep its version in a
`format_version` key (the evidence pack's `format` string). A raw record without a version
is version 1: the files written before versions existed (tests/fixtures/format_v1).

Why one package (inspect_ai's `EvalLog.version`, dbt's manifest v5-v12 upgrades): an
audit's evidence is re-opened years later by a later biasaudit; readers that each guess at
an older layout by hand drift apart, and records that accept any key cannot tell an old
file from a damaged one. With the steps here the records refuse unknown keys.

A file newer than this biasaudit reads is refused with one line (exit 2 at the CLI)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from functools import cache
from types import ModuleType
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from biasaudit.errors import BiasAuditError, DataError
from biasaudit.records.json import JSONObject

Raw = JSONObject
"""A record as read from its file: a JSON object (the steps work on the raw JSON)."""
Step = Callable[[Raw], Raw]
M = TypeVar("M", bound=BaseModel)

VERSION_KEY = "format_version"


class NewerFormatError(DataError):
    """A file written by a later biasaudit than this one (exit 2: upgrade biasaudit)."""


@cache
def kinds() -> dict[str, ModuleType]:
    """Kind name -> its module, for every module of this package (found, not listed)."""
    out: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        current, steps = getattr(mod, "CURRENT", None), getattr(mod, "STEPS", None)
        if not isinstance(current, int) or current < 1 or not isinstance(steps, Mapping):
            raise TypeError(f"{mod.__name__} must define CURRENT: int >= 1 and STEPS: dict[int, Callable]")
        if sorted(steps) != list(range(1, current)):  # a gap would leave a version unreadable
            raise TypeError(f"{mod.__name__}: STEPS must hold one step for each of 1..{current - 1}, "
                            f"not {sorted(steps)}")
        out[info.name] = mod
    return out


def _module(kind: str) -> ModuleType:
    try:
        return kinds()[kind]
    except KeyError:
        raise KeyError(f"no upgrade module for file kind {kind!r} (one of: {', '.join(sorted(kinds()))})") from None


def current(kind: str) -> int:
    """The version of `kind` this biasaudit writes."""
    out: int = _module(kind).CURRENT
    return out


def version_of(kind: str, raw: Raw) -> int:
    """The version a raw record says it is (absent: 1). A version that is not a positive
    integer is 0: no step is applied, and the record's own check refuses it (its
    `format_version` is today's)."""
    mod = _module(kind)
    custom = getattr(mod, "version_of", None)
    if custom is not None:
        v: int = custom(raw)
        return v
    value = raw.get(VERSION_KEY, 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 0


def check_readable(kind: str, version: int, *, file: str | None = None) -> None:
    """Refuse a version newer than this biasaudit reads, as one line."""
    cur = current(kind)
    if version > cur:
        raise NewerFormatError(f"written by a newer biasaudit: format {version} of {kind}; this version reads "
                               f"up to {cur}; upgrade biasaudit", file=file, key=VERSION_KEY,
                               hint="install a biasaudit at least as new as the one that wrote the file")


def upgrade(kind: str, raw: Raw, *, file: str | None = None, version: int | None = None) -> tuple[Raw, int]:
    """`raw` (a record of `kind`, as read) in today's layout, and the version it was read
    as. `version` is given for the lines of a JSON-lines trail, whose version is in the
    file's header (records.upgrade never sees the header). The input is not changed."""
    read = version_of(kind, raw) if version is None else version
    check_readable(kind, read, file=file)
    mod = _module(kind)
    out = raw
    for k in range(read, mod.CURRENT) if read >= 1 else ():  # 0: not a version (left to the record)
        out = mod.STEPS[k](dict(out))
    return out, read


def _key_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def validated(kind: str, model: type[M], raw: object, *, file: str, version: int | None = None,
              error: type[BiasAuditError] = DataError, name: str = "", hint: str | None = None) -> tuple[M, int]:
    """`raw` upgraded from the version it is to today's and checked as `model`; every way
    it fails is one `error` naming the file and the key path (an unknown key: a file this
    biasaudit did not write, or a damaged one). `name` begins the message ("manifest.json")."""
    hint = hint or f"give a {kind} file written by biasaudit"
    if not isinstance(raw, dict):
        raise error(f"{name} is not a JSON object".strip(), file=file, hint=hint)
    up, read = upgrade(kind, raw, file=file, version=version)
    try:
        return model.model_validate(up), read
    except ValidationError as exc:
        err = exc.errors()[0]
        where = _key_path(err["loc"])
        if err["type"] == "extra_forbidden":
            raise error(f"unknown key {where!r} (format {read} of {kind} has no such key)", file=file, hint="a file this biasaudit did not write, or an edited "
                                                               "one: remove the key, or read it with the biasaudit "
                                                               "that wrote it") from None
        raise error(f"{name + ' ' if name else ''}lacks a usable {where!r} ({err['msg'][:80]})", file=file,
                    hint=hint) from None


__all__ = ["NewerFormatError", "VERSION_KEY", "check_readable", "current", "kinds", "upgrade", "validated",
           "version_of"]
