r"""API keys: read only from the environment variables a config names (`api_key_env`),
and scrubbed from everything biasaudit writes.

Backends never put a key in an error on purpose, but a server may echo the
Authorization header in an error body, and a bug may format a header into a message.
So the values of every `api_key_env` variable of the run are registered here, and
response errors and outputs (before they reach the store, the trail or a report), log
records and the CLI's error lines are scrubbed of them: a second line of defence, not
the first.

A server echoes a key in whatever encoding its error page or its answer uses, so the key
is looked for in every form that is cheap to derive from it:

- as itself, reversed, or hex-encoded (its UTF-8 bytes); each in any letter case (a
  server that upper- or lower-cases what it echoes);
- base64-encoded (standard or URL-safe alphabet, at each of the three byte alignments
  inside a longer encoded text, e.g. a Basic-auth header);
- cut short: any prefix of at least `MIN_SECRET_LEN` characters of each of these forms
  (`2 * MIN_SECRET_LEN` hex digits), as in a truncated error message;

and, in each of these, each character may appear as itself, JSON-escaped (`\/`,
`\u002f`), URL-encoded (`%2F`, `+` for a space) or as an HTML character reference
(`&#x2f;`), mixed freely. Each registered key is compiled into patterns that match all
of these.
"""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"
# Shorter values are not treated as secrets: scrubbing them would mangle ordinary text.
MIN_SECRET_LEN = 8
_secrets: set[str] = set()


@dataclass(frozen=True)
class _Form:
    """One derived form of a key: the pattern of the whole form, the pattern of its
    shortest prefix that is still scrubbed, and one pattern per character to extend a
    prefix match as far as it goes."""

    whole: re.Pattern[str]
    prefix: re.Pattern[str]
    chars: tuple[re.Pattern[str], ...]
    min_prefix: int


_compiled: dict[str, list[_Form]] = {}


def _char(c: str) -> str:
    """A regex for one character of a key in any of the encodings a server may use."""
    alts = [re.escape(c)]
    o = ord(c)
    if o < 0x10000:
        alts.append(f"\\\\u{o:04x}")
    if o < 0x80:
        alts.append(f"%{o:02x}")
    alts += [f"&#0*{o};", f"&#x0*{o:x};"]
    if c == "/":
        alts.append(r"\\/")
    if c == " ":
        alts.append(r"\+")
    return "(?:" + "|".join(alts) + ")"


def _compile(text: str) -> re.Pattern[str]:
    # every form in any letter case: a server may upper- or lower-case what it echoes
    return re.compile("".join(_char(c) for c in text), re.IGNORECASE)


def _b64_cores(key: str) -> list[str]:
    """The part of base64(... + key + ...) that depends only on the key, for each of the
    three byte alignments, in both alphabets."""
    raw = key.encode("utf-8")
    out = []
    for o in range(3):
        enc = base64.b64encode(b"\0" * o + raw).decode("ascii").rstrip("=")
        first = -(-8 * o // 6)
        last = (8 * (o + len(raw)) - 6) // 6
        core = enc[first:last + 1]
        if len(core) >= MIN_SECRET_LEN:
            out += [core, core.translate(str.maketrans("+/", "-_"))]
    return list(dict.fromkeys(out))


def derived_forms(secret: str) -> list[str]:
    """Every whole form of a key that is scrubbed (for tests and docs): itself, reversed,
    hex-encoded, and its base64 cores; each also matches in any letter case."""
    return list(dict.fromkeys([secret, secret[::-1], secret.encode("utf-8").hex(), *_b64_cores(secret)]))


def _forms(secret: str) -> list[_Form]:
    if secret not in _compiled:
        hexed = secret.encode("utf-8").hex()
        texts = [(secret, MIN_SECRET_LEN), (secret[::-1], MIN_SECRET_LEN), (hexed, 2 * MIN_SECRET_LEN),
                 *((core, MIN_SECRET_LEN) for core in _b64_cores(secret))]
        # each form also cut short: a truncated echo still leaks its first characters
        _compiled[secret] = [_Form(whole=_compile(text), prefix=_compile(text[:shortest]),
                                   chars=tuple(_compile(c) for c in text), min_prefix=shortest)
                             for text, shortest in dict.fromkeys(texts)]
    return _compiled[secret]


def key_env_names(cfg: Any) -> list[str]:
    """Names of the `api_key_env` variables of every model in a composed config."""
    models = [cfg.model]
    if cfg.nli is not None and cfg.nli.model is not None:
        models.append(cfg.nli.model)
    if cfg.judge is not None:
        models += [j.model for j in cfg.judge.judges if j.model is not None]
    # only the configs of a model behind an API hold a key name (spec.OpenAICompatConfig,
    # and the scripted double standing in for one)
    return sorted({m.api_key_env for m in models if "api_key_env" in type(m).model_fields and m.api_key_env})


def watch_env(names: Iterable[str]) -> None:
    for name in names:
        watch_value(os.environ.get(name))


def watch_value(value: str | None) -> None:
    """Scrub this value from everything written from now on."""
    if value and len(value) >= MIN_SECRET_LEN:
        _secrets.add(value)


def watch_config(cfg: Any) -> None:
    watch_env(key_env_names(cfg))
    guard_logging()


def _redact_prefixes(form: _Form, text: str) -> str:
    """Prefixes of a form: its shortest leaking prefix, then as many more characters as match."""
    spans = []
    for m in form.prefix.finditer(text):
        end, i = m.end(), form.min_prefix
        while i < len(form.chars) and (n := form.chars[i].match(text, end)):
            end, i = n.end(), i + 1
        spans.append((m.start(), end))
    for start, end in reversed(spans):
        text = text[:start] + REDACTED + text[end:]
    return text


def redact(text: str) -> str:
    for s in _secrets:
        forms = _forms(s)
        for f in forms:
            text = f.whole.sub(REDACTED, text)
        for f in forms:
            text = _redact_prefixes(f, text)
    return text


def redact_obj(obj: Any) -> Any:
    if not _secrets:
        return obj
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):  # keys too: a server may put the key in a token of a log-prob table
        return {redact(k) if isinstance(k, str) else k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_obj(v) for v in obj]
    return obj


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            msg = record.getMessage()
            clean = redact(msg)
            if clean != msg:
                record.msg, record.args = clean, ()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact(record.exc_text)
        return True


_FILTER = RedactingFilter()


def guard_logging() -> None:
    """Scrub log records on every root handler (Hydra replaces the handlers per job, so
    this is called again when a run starts)."""
    for handler in logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)


def forget_all() -> None:
    """For tests: start from no registered secrets."""
    _secrets.clear()
    _compiled.clear()
