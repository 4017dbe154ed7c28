r"""API keys: read only from the environment variables a config names (`api_key_env`),
and scrubbed from everything biasaudit writes.

Backends never put a key in an error on purpose, but a server may echo the
Authorization header in an error body, and a bug may format a header into a message.
So the values of every `api_key_env` variable of the run are registered here, and
response errors and outputs (before they reach the store, the trail or a report) and
log records are scrubbed of them: a second line of defence, not the first.

A server echoes a key in whatever encoding its error page uses, so each character of
the key may appear as itself, JSON-escaped (`\/`, `\u002f`), URL-encoded (`%2F`, `+`
for a space) or as an HTML character reference (`&#x2f;`), mixed freely; the key may
also appear base64-encoded (standard or URL-safe alphabet, at any alignment inside a
longer encoded text, e.g. a Basic-auth header) or cut short (any prefix of at least
`MIN_SECRET_LEN` characters, as in a truncated error message). Each registered key is
compiled into patterns that match all of these.
"""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"
# Shorter values are not treated as secrets: scrubbing them would mangle ordinary text.
MIN_SECRET_LEN = 8
_secrets: set[str] = set()
_compiled: dict[str, tuple[list[re.Pattern[str]], list[re.Pattern[str]]]] = {}


def _char(c: str) -> str:
    """A regex for one character of a key in any of the encodings a server may use."""
    alts = [re.escape(c)]
    o = ord(c)
    if o < 0x10000:
        alts.append(f"(?i:\\\\u{o:04x})")
    if o < 0x80:
        alts.append(f"(?i:%{o:02x})")
    alts += [f"&#0*{o};", f"(?i:&#x0*{o:x};)"]
    if c == "/":
        alts.append(r"\\/")
    if c == " ":
        alts.append(r"\+")
    return "(?:" + "|".join(alts) + ")"


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


def _patterns(secret: str) -> tuple[list[re.Pattern[str]], list[re.Pattern[str]]]:
    """(whole-string patterns, per-character patterns for extending a prefix match)."""
    if secret not in _compiled:
        whole = [re.compile("".join(_char(c) for c in s)) for s in [secret, *_b64_cores(secret)]]
        whole.append(re.compile("".join(_char(c) for c in secret[:MIN_SECRET_LEN])))  # a prefix
        _compiled[secret] = whole, [re.compile(_char(c)) for c in secret]
    return _compiled[secret]


def key_env_names(cfg: Any) -> list[str]:
    """Names of the `api_key_env` variables of every model in a composed config."""
    models = [cfg.model]
    if cfg.nli is not None and cfg.nli.model is not None:
        models.append(cfg.nli.model)
    if cfg.judge is not None:
        models += [j.model for j in cfg.judge.judges if j.model is not None]
    return sorted({m.api_key_env for m in models if m.api_key_env})


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


def redact(text: str) -> str:
    for s in _secrets:
        whole, chars = _patterns(s)
        for pat in whole[:-1]:
            text = pat.sub(REDACTED, text)
        # a prefix of the key: the first MIN_SECRET_LEN characters, then as many more as match
        spans = []
        for m in whole[-1].finditer(text):
            end, i = m.end(), MIN_SECRET_LEN
            while i < len(chars) and (n := chars[i].match(text, end)):
                end, i = n.end(), i + 1
            spans.append((m.start(), end))
        for start, end in reversed(spans):
            text = text[:start] + REDACTED + text[end:]
    return text


def redact_obj(obj: Any) -> Any:
    if not _secrets:
        return obj
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_obj(v) for k, v in obj.items()}
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
