"""Sandboxed Jinja rendering with StrictUndefined, bounded in size, steps and time, and
template-variable checks.

Jinja's sandbox keeps templates away from Python internals, forbids mutating objects
and bounds `range`; it does not bound what a template builds or how long it runs, so a
spec of a few bytes could exhaust memory (`'a'|center(10**10)`, doubling a string with
`~` in a loop, `join`) or spin for hours (nested loops, recursive macros). This module
adds those bounds, written by hand because no maintained library bounds Jinja:

- size: every string a template builds (operators, `~`, filters, string methods, block
  captures, the output) is checked before it is built where its size can be computed
  first (widths, joins, replacements, repeated structures turned into text), and after
  otherwise; nothing may exceed `chars`;
- steps: loop iterations and calls (macros, filters, methods) count against `steps` per
  render, so nested loops and recursive macros stop;
- time: a render stops after `seconds` (checked every few steps).

The limits are the operator's (`runtime.limits.template_*`); `configure` sets them.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache, wraps
from typing import Any

from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError, meta, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace, _PassArg

from biasaudit.errors import SpecError
from biasaudit.registry import TEMPLATE_FUNCTIONS


@dataclass(frozen=True)
class TemplateLimits:
    chars: int = 1_000_000
    """Longest string (or list) a template may build, its output included."""
    steps: int = 1_000_000
    """Loop iterations plus calls per render."""
    seconds: float = 5.0
    """Wall-clock time per render."""


_limits = TemplateLimits()


def configure(chars: int, steps: int, seconds: float) -> None:
    """Set the bounds for every later render in this process (the run's `runtime.limits`)."""
    global _limits
    _limits = TemplateLimits(chars=chars, steps=steps, seconds=seconds)


class _Budget(threading.local):
    steps = 0
    deadline = math.inf


_budget = _Budget()


def _tick(n: int = 1) -> None:
    _budget.steps += n
    if _budget.steps > _limits.steps:
        raise SecurityError(f"the template takes more than {_limits.steps} loop iterations and calls")
    if _budget.steps % 64 < n and time.monotonic() > _budget.deadline:
        raise SecurityError(f"the template takes longer than {_limits.seconds:g} s to render")


def _size(obj: Any, limit: int) -> int:
    """Characters `str(obj)` would have, counted without building it and given up past
    `limit` (a list holding the same long string many times is small in memory but
    huge as text)."""
    total = 0
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, str | bytes):
            total += len(x) + 2
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
            total += 2 + 4 * len(x)
        elif isinstance(x, list | tuple | set | frozenset):
            stack.extend(x)
            total += 2 + 2 * len(x)
        elif isinstance(x, Namespace):
            stack.append(object.__getattribute__(x, "_Namespace__attrs"))
        else:
            total += 24
        if total > limit:
            return total
    return total


def _too_big(what: str, n: int) -> SecurityError:
    return SecurityError(f"{what} would be {n} characters long, over the limit of {_limits.chars}")


def _check_size(value: Any, what: str) -> Any:
    n = _size(value, _limits.chars)
    if n > _limits.chars:
        raise _too_big(what, n)
    return value


_WIDTH = re.compile(r"\d+")


def _check_format(fmt: str, args: Any) -> None:
    """`%` and `format` specs: a width or precision past the limit, or a `*` width taken
    from the arguments, would build a huge string from a short one."""
    for m in _WIDTH.finditer(fmt):
        if len(m.group()) > 9 or int(m.group()) > _limits.chars:
            raise SecurityError(f"format width {m.group()[:20]} is over the limit of {_limits.chars}")
    flat = args if isinstance(args, list | tuple) else (args.values() if isinstance(args, dict) else [args])
    # `%*d` or `{0:{1}}` take the width from an argument
    if re.search(r"%[-+ #0]*\*|\{[^{}]*\{", fmt):
        for a in flat:
            if isinstance(a, int) and abs(a) > _limits.chars:
                raise SecurityError(f"format width {a} is over the limit of {_limits.chars}")
    _check_size([fmt, *flat], "the formatted text")


def _bounded_join(parts: Iterable[Any]) -> str:
    """`environment.concat`: joins template output, block captures and macro results."""
    out: list[str] = []
    n = 0
    for p in parts:
        s = str(p)
        n += len(s)
        if n > _limits.chars:
            raise _too_big("the rendered text", n)
        out.append(s)
    return "".join(out)


def _counted(items: Any) -> Iterator[Any]:
    """A `for` loop's iterable: each iteration is a step."""
    for x in items:
        _tick()
        yield x


def _estimate_join(items: list[Any] | tuple[Any, ...] | str, sep: Any = "") -> int:
    return _size(list(items), _limits.chars) + max(0, len(items) - 1) * len(str(sep))


def _estimate_replace(s: str, old: str, new: str, count: int = -1) -> int:
    hits = (len(s) + 1) if old == "" else s.count(old)
    if count is not None and count >= 0:
        hits = min(hits, count)
    return len(s) + hits * max(0, len(new) - len(old))


# filter -> (positions of width-like int arguments after the value, keyword names)
_WIDTH_ARGS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "center": ((0,), ("width",)), "indent": ((0,), ("width",)), "wordwrap": ((0,), ("width",)),
    "truncate": ((0,), ("length",)), "batch": ((0,), ("linecount",)), "slice": ((0,), ("slices",)),
    "filesizeformat": ((), ()), "round": ((0,), ("precision",)),
}
# filters that return a number, an item or a sequence of the input's own items: their
# size is the input's, no text is built
_NO_TEXT = {"length", "count", "first", "last", "default", "d", "attr", "select", "reject", "selectattr",
            "rejectattr", "map", "list", "unique", "sort", "dictsort", "groupby", "sum", "min", "max",
            "random", "abs", "int", "float", "items", "batch", "slice", "boolean", "reverse"}


def _guard_filter(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    positions, keywords = _WIDTH_ARGS.get(name, ((), ()))
    skip = 0 if _PassArg.from_obj(f) is None else 1  # a context/environment Jinja passes first

    @wraps(f)  # keeps Jinja's pass_context/pass_environment marks
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _tick()
        vals = args[skip:]
        value, rest = (vals[0], list(vals[1:])) if vals else (None, [])
        widths = [rest[i] for i in positions if i < len(rest)] + [kwargs[k] for k in keywords if k in kwargs]
        if name == "indent":  # the indent may be a string, repeated on every line
            w = widths[0] if widths else 4
            per = len(w) if isinstance(w, str) else w if isinstance(w, int) else 0
            n = len(str(value)) + (str(value).count("\n") + 1) * per
            if n > _limits.chars:
                raise _too_big(f"`{name}`", n)
        elif any(isinstance(w, int) and abs(w) > _limits.chars for w in widths):
            raise SecurityError(f"`{name}` width over the limit of {_limits.chars}")
        if name == "join":
            if value is not None and not isinstance(value, list | tuple | str):  # a generator: measure a copy
                value = list(value)
                args = (*args[:skip], value, *args[skip + 1:])
            n = _estimate_join(value if value is not None else [], rest[0] if rest else kwargs.get("d", ""))
            if n > _limits.chars:
                raise _too_big("`join`", n)
        elif name == "replace" and isinstance(value, str) and len(rest) >= 2:
            n = _estimate_replace(value, str(rest[0]), str(rest[1]), rest[2] if len(rest) > 2 else -1)
            if n > _limits.chars:
                raise _too_big("`replace`", n)
        elif name == "format" and isinstance(value, str):
            _check_format(value, [*rest, *kwargs.values()])
        elif name not in _NO_TEXT:
            _check_size([value, *rest, *kwargs.values()], f"the input of `{name}`")
        result = f(*args, **kwargs)
        if isinstance(result, str | list | tuple):
            _check_size(result, f"the result of `{name}`")
        return result

    return guarded


_STR_WIDTHS = {"center", "ljust", "rjust", "zfill", "expandtabs"}


def _check_method(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """String methods that build text: check what they would build first. Returns the
    arguments (a generator given to `join` is measured as a list, and passed on as one)."""
    obj = getattr(obj, "__wrapped__", obj)  # the sandbox hands out str.format wrapped
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__name__", "")
    if not isinstance(owner, str):
        return args
    if name == "join" and args and not isinstance(args[0], list | tuple | str):
        args = (list(args[0]), *args[1:])
    if name in _STR_WIDTHS:
        for a in [*args, *kwargs.values()]:
            if isinstance(a, int) and abs(a) > _limits.chars:
                raise SecurityError(f"str.{name} width {a} is over the limit of {_limits.chars}")
    elif name == "join" and args and isinstance(args[0], list | tuple | str):
        n = _estimate_join(args[0], owner)
        if n > _limits.chars:
            raise _too_big("str.join", n)
    elif name == "replace" and len(args) >= 2:
        n = _estimate_replace(owner, str(args[0]), str(args[1]), args[2] if len(args) > 2 else -1)
        if n > _limits.chars:
            raise _too_big("str.replace", n)
    elif name in ("format", "format_map"):
        _check_format(owner, [*args, *kwargs.values()])
    return args


class _BoundedCodeGenerator(CodeGenerator):
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        # `a ~ b ~ c` joins through the bounded `environment.concat`, not Jinja's str_join
        self.write("environment.concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with the bounds described in the module docstring."""

    code_generator_class = _BoundedCodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})
    concat = staticmethod(_bounded_join)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _tick()
        limit = _limits.chars
        if operator == "**" and isinstance(left, int) and isinstance(right, int) and \
                abs(left) > 1 and right * math.log10(abs(left)) > limit:
            raise SecurityError(f"{left} ** {right} is too large")
        if operator == "*":
            seq, n = (left, right) if isinstance(right, int) else (right, left)
            if isinstance(seq, str | list | tuple) and isinstance(n, int) and len(seq) * n > limit:
                raise SecurityError(f"a sequence of {len(seq) * n} items is too long")
        if operator == "+" and isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
            if len(left) + len(right) > limit:
                raise _too_big("a `+` result", len(left) + len(right))
        if operator == "%" and isinstance(left, str):
            _check_format(left, right)
            result = super().call_binop(context, operator, left, right)
            return _check_size(result, "the `%` result")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _tick()
        args = _check_method(__obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(result, str | list | tuple):
            _check_size(result, "a call's result")
        return result

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        # every `for` loop iterates through `environment.counted`, which counts steps
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Call(nodes.EnvironmentAttribute("counted"), [loop.iter], [], None, None,
                                   lineno=loop.lineno)
        return tree

    counted = staticmethod(_counted)


def _finalize(value: Any) -> Any:
    """Every `{{ ... }}` value, before it is turned into text."""
    return _check_size(value, "an output value")


_ENV = _BoundedSandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False,
                       finalize=_finalize)
_ENV.filters = {name: _guard_filter(name, f) for name, f in _ENV.filters.items()}
_ENV.globals.pop("lipsum", None)  # n paragraphs of filler: nothing a prompt needs, and unbounded
_FUNCTIONS: dict[str, Any] = {}


def template_functions() -> dict[str, Any]:
    """Functions spec templates may call (pure, no I/O), registered by method packages
    (e.g. `frame_prompt`); made visible to the sandbox as they appear."""
    funcs = dict(TEMPLATE_FUNCTIONS.items())
    if funcs.keys() != _FUNCTIONS.keys():
        _FUNCTIONS.clear()
        _FUNCTIONS.update(funcs)
        _ENV.globals.update(funcs)
        _compile.cache_clear()
        _reads.cache_clear()
        _render_memo.cache_clear()
    return _FUNCTIONS


@lru_cache(maxsize=4096)
def _compile(source: str):  # type: ignore[no-untyped-def]
    return _ENV.from_string(source)


def _syntax_error(exc: BaseException, file: str | None, key: str) -> SpecError:
    if isinstance(exc, TemplateSyntaxError):
        return SpecError(f"template syntax error at line {exc.lineno}: {exc.message}", file=file, key=key,
                         hint="check {{ }} and {% %} pairs")
    return SpecError("template is nested too deeply", file=file, key=key,
                     hint="flatten the expression (brackets, filters or blocks nested hundreds deep)")


def variables(source: str, *, file: str | None, key: str) -> set[str]:
    """Names a template reads from its context."""
    try:
        return set(meta.find_undeclared_variables(_ENV.parse(source)))
    except (TemplateSyntaxError, RecursionError) as exc:
        raise _syntax_error(exc, file, key) from None


def check_variables(
    source: str, available: set[str], *, file: str | None, key: str
) -> None:
    missing = sorted(variables(source, file=file, key=key) - available - set(template_functions()))
    if missing:
        raise SpecError(
            f"template variable {missing[0]!r} has no source",
            file=file,
            key=key,
            hint=f"available: {', '.join(sorted(available))}",
        )


@lru_cache(maxsize=4096)
def _reads(source: str) -> tuple[str, ...]:
    return tuple(sorted(set(meta.find_undeclared_variables(_ENV.parse(source))) - set(_FUNCTIONS)))


def reads(source: str) -> frozenset[str]:
    """The names `render` looks up for `source` (what its output depends on), for a
    template that has rendered (it parses)."""
    if not _FUNCTIONS:
        template_functions()
    return frozenset(_reads(source))


def _render_now(source: str, context: dict[str, Any]) -> str:
    _budget.steps = 0
    _budget.deadline = time.monotonic() + _limits.seconds
    return _bounded_join(_compile(source).generate(**context))


@lru_cache(maxsize=65536)
def _render_memo(source: str, typed: tuple[tuple[type, Any], ...]) -> str:
    # the types are part of the key: 1, 1.0 and True are equal but render differently
    return _render_now(source, {n: v for n, (_t, v) in zip(_reads(source), typed, strict=True)})


def forget_renders() -> None:
    """Drop the memoised renders (up to 65,536 texts with their inputs): a compiled plan
    holds its texts, and nothing after the plan stage reads the memo (issue 42)."""
    _render_memo.cache_clear()


def render(source: str, context: dict[str, Any], *, file: str | None, key: str) -> str:
    """Render `source` in the sandbox. Templates are pure functions of the variables they
    read, so a render is memoised on those values: a plan renders each distinct (template,
    inputs) once, however many cells repeat it (large grids repeat most level texts)."""
    if not _FUNCTIONS:
        template_functions()
    try:
        names = _reads(source)
        if all(n in context for n in names):
            try:
                return _render_memo(source, tuple((type(context[n]), context[n]) for n in names))
            except TypeError as exc:  # an unhashable value (a mapping): render directly
                if "unhashable" not in str(exc):
                    raise
        return _render_now(source, context)
    except (TemplateSyntaxError, RecursionError) as exc:
        raise _syntax_error(exc, file, key) from None
    except (TemplateError, ValueError, TypeError, ArithmeticError, LookupError, AttributeError,
            MemoryError) as exc:
        text = str(exc) if not isinstance(exc, MemoryError) else "out of memory"
        raise SpecError(f"template error: {text[:300]}", file=file, key=key,
                        hint="templates see stimulus fields and level vars; Python internals are off limits, and "
                             "size, steps and time are bounded (runtime.limits.template_*)") from None


def sandbox_refusal(source: str, context: dict[str, Any]) -> str | None:
    """What the sandbox refuses when `source` renders over `context` (an unsafe attribute
    such as `''.__class__`, a size, step or time bound), or None: a trial render at
    validation, where other errors (a type the stand-in values do not have) say nothing."""
    if not _FUNCTIONS:
        template_functions()
    try:
        _render_now(source, context)
    except SecurityError as exc:
        return str(exc)[:300]
    except (TemplateError, ValueError, TypeError, ArithmeticError, LookupError, AttributeError, RecursionError):
        return None
    return None
