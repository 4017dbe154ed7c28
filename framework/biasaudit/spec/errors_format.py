"""Turn Pydantic validation errors into one-line messages with a key path and a hint."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The Pydantic model class that holds the last element of `loc`, if any. A
    discriminated union's member is chosen by the tag Pydantic puts in `loc` after the
    field (`model.openai_compat.dtype`)."""
    current: Any = root
    for part in loc[:-1]:
        tagged = _tagged(current, part)
        if tagged is not None:
            current = tagged
            continue
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return None
            current = _declared(field)
        else:
            origin = typing.get_origin(current)
            args = typing.get_args(current)
            if origin in (dict,) and len(args) == 2:
                current = args[1]
            elif origin in (list,) and args:
                current = args[0]
            else:
                return None
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _strip_annotated(tp: Any) -> Any:
    return typing.get_args(tp)[0] if typing.get_origin(tp) is typing.Annotated else tp


def _declared(field: FieldInfo) -> Any:
    """A field's type as declared: Pydantic moves the metadata of a top-level `Annotated`
    (a registry-built union's validator) out of `annotation`; put it back."""
    if field.metadata:
        return typing.Annotated[(field.annotation, *field.metadata)]
    return field.annotation


def _registered(tp: Any) -> list[type[BaseModel]] | None:
    """The members of a union assembled from a registry when it validates (an `Annotated`
    whose metadata has `members()`, as `ModelConfig`'s), or None."""
    if typing.get_origin(tp) is typing.Annotated:
        for meta in getattr(tp, "__metadata__", ()):
            if callable(getattr(meta, "members", None)):
                return list(meta.members())
    return None


def _members(tp: Any) -> list[type[BaseModel]]:
    """The model classes of a union (nested unions and `Annotated` flattened)."""
    registered = _registered(tp)
    if registered is not None:
        return registered
    tp = _strip_annotated(tp)
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return []
    out: list[type[BaseModel]] = []
    for arg in typing.get_args(tp):
        registered = _registered(arg)
        if registered is not None:
            out += registered
            continue
        a = _strip_annotated(arg)
        if typing.get_origin(a) in (typing.Union, types.UnionType):
            out += _members(a)
        elif isinstance(a, type) and issubclass(a, BaseModel):
            out.append(a)
    return out


def _tag_of(cls: type[BaseModel], tag: Any) -> bool:
    """Whether one of `cls`'s fields is the single literal `tag` (its discriminator)."""
    return any(typing.get_origin(f.annotation) is typing.Literal and typing.get_args(f.annotation) == (tag,)
               for f in cls.model_fields.values())


def _tagged(tp: Any, part: Any) -> type[BaseModel] | None:
    """The member of a discriminated union `tp` that the tag `part` selects."""
    if not isinstance(part, str):
        return None
    members = _members(tp)
    if len(members) < 2:
        return None
    return next((m for m in members if _tag_of(m, part)), None)


def _without_tags(root: type[BaseModel], loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """`loc` as the user wrote the keys: the tags Pydantic adds for discriminated unions
    dropped (`model.openai_compat.dtype` -> `model.dtype`)."""
    out: list[Any] = []
    for i, part in enumerate(loc):
        if i and isinstance(part, str):
            holder = _model_at(root, loc[:i])
            field = holder.model_fields.get(str(loc[i - 1])) if holder is not None else None
            if field is not None and _tagged(_declared(field), part) is not None:
                continue
        out.append(part)
    return tuple(out)


def _unwrap(tp: Any) -> Any:
    """Strip Optional/Union-with-None (and `Annotated`) so the interesting type is left."""
    tp = _strip_annotated(tp)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [_strip_annotated(a) for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
        for a in args:
            if isinstance(a, type) and issubclass(a, BaseModel):
                return a
    return tp


def _tags(root: type[BaseModel], loc: tuple[Any, ...], field: str) -> list[str]:
    """The tags of the discriminated union at `loc` (its members' `field` literals)."""
    holder = _model_at(root, loc) if loc else None
    annotation = _declared(holder.model_fields[str(loc[-1])]) if holder and str(loc[-1]) in holder.model_fields else None
    out: list[str] = []
    for m in _members(annotation):
        f = m.model_fields.get(field)
        if f is not None and typing.get_origin(f.annotation) is typing.Literal:
            out += [str(a) for a in typing.get_args(f.annotation)]
    return out


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_name(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args if a is not type(None))
    if origin is list:
        inner = _type_name(args[0]) if args else ""
        return "a list of mappings" if inner == "a mapping" else f"a list of {inner}" if inner else "a list"
    if origin is dict:
        return "a mapping"
    names = {int: "a whole number", float: "a number", str: "text", bool: "true or false"}
    if tp in names:
        return names[tp]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "a mapping"
    return getattr(tp, "__name__", str(tp))


def _annotation(root: type[BaseModel], loc: tuple[Any, ...]) -> Any:
    """The type annotation of the model field at `loc` (None when it is not one)."""
    holder = _model_at(root, loc)
    field = holder.model_fields.get(str(loc[-1])) if holder and loc else None
    return None if field is None else field.annotation


def _expected(root: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """What the field at `loc` takes, in words."""
    tp = _annotation(root, loc)
    return None if tp is None else _type_name(tp)


def _literal_values(root: type[BaseModel], loc: tuple[Any, ...]) -> tuple[Any, ...]:
    tp = _unwrap(_annotation(root, loc))
    if typing.get_origin(tp) is list:  # a list of literals: the error is on an item
        tp = typing.get_args(tp)[0]
    return typing.get_args(tp) if typing.get_origin(tp) is typing.Literal else ()


def key_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _wrong_backend(holder: type[BaseModel] | None, key: str) -> tuple[str, list[str]] | None:
    """(the holder's backend, the backends that have `key`) when `key` is a setting of
    another model backend than the one the config names."""
    from biasaudit.spec.model_configs import BaseModelConfig, backend_tag, backends_with

    if holder is None or not issubclass(holder, BaseModelConfig):
        return None
    others = backends_with(key)
    return (backend_tag(holder), others) if others else None


def _wrong_backend_line(parent: str, holder: type[BaseModel], backend: str, keys: list[str],
                        others: list[str]) -> tuple[str, str, str | None]:
    why = str(getattr(holder, "ignores_why", ""))
    where = ", ".join(dict.fromkeys(others))
    if len(keys) == 1:
        path = f"{parent}.{keys[0]}" if parent else keys[0]
        return (path, f"has no effect on the {backend} backend" + (f" ({why})" if why else ""),
                f"remove {path} (a setting of {where}), or choose a model config of that backend")
    msg = f"{', '.join(keys)} have no effect on the {backend} backend" + (f" ({why})" if why else "")
    return (parent, msg, f"remove them (settings of {where}), or choose a model config of that backend")


def describe(exc: ValidationError, root: type[BaseModel]) -> list[tuple[str, str, str | None]]:
    """(key path, message, hint) for each error. Settings of another model backend given
    to one model config are said in one line per config, with the fix."""
    out: list[tuple[str, str, str | None]] = []
    wrong: dict[str, tuple[type[BaseModel], str, list[str], list[str]]] = {}
    for err in exc.errors():
        raw = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        loc = _without_tags(root, raw)
        path = key_path(loc)
        kind = err["type"]
        hint: str | None = None
        if kind == "extra_forbidden":
            holder = _model_at(root, raw)
            misplaced = _wrong_backend(holder, str(loc[-1]))
            if misplaced is not None and holder is not None:
                parent = key_path(loc[:-1])
                _, _, keys, others = wrong.setdefault(parent, (holder, misplaced[0], [], []))
                keys.append(str(loc[-1]))
                others += misplaced[1]
                continue
            allowed = sorted(holder.model_fields) if holder else []
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            msg = f"unknown key {str(loc[-1])!r}"
            if close:
                hint = f"did you mean {close[0]!r}? allowed: {', '.join(allowed)}"
            elif allowed:
                hint = f"allowed keys: {', '.join(allowed)}"
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            ctx = err.get("ctx") or {}
            field = str(ctx.get("discriminator", "")).strip("'")
            tags = _tags(root, raw, field)
            path = key_path((*loc, field))
            if kind == "union_tag_not_found":
                msg, hint = "required key is missing", f"one of: {', '.join(tags)}"
            else:
                got = ctx.get("tag")
                msg = f"unknown {field} {got!r}"
                close = difflib.get_close_matches(str(got), tags, n=1)
                hint = (f"did you mean {close[0]!r}? " if close else "") + f"one of: {', '.join(tags)}"
        elif kind == "missing":
            msg = "required key is missing"
            hint = "add it to the spec or the config group"
        elif kind == "literal_error":
            msg = f"{err['msg']} (got {_shape(err.get('input'))})"
            allowed = [str(a) for a in _literal_values(root, raw)]
            close = difflib.get_close_matches(str(err.get("input")), allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else "choose one of the listed values"
        else:
            msg = err["msg"]
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, ") :]
            got = err.get("input")
            if kind not in ("value_error",):
                msg += f" (got {_shape(got)})"
                expected = _expected(root, raw)
                hint = f"expected {expected}" if expected else "`biasaudit schema` lists every key and its type"
            else:
                hint = "fix the value (`biasaudit schema` describes every key)"
        out.append((path, msg, hint))
    lines = [_wrong_backend_line(parent, holder, backend, keys, others)
             for parent, (holder, backend, keys, others) in wrong.items()]
    return lines + out
