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

log = logging.getLogger(__name__)

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 8
"""Shorter values are not scrubbed (the variable's name is warned about instead): every
value is also looked for cut short, reversed and in any letter case, so a 4-letter `none`
would rewrite `none`, `None` and `enon` in every message. No provider issues keys this
short (theirs run 20 to 200 characters), and a random string of 8 or more characters does
not turn up in ordinary text by chance."""
PLACEHOLDERS = frozenset({
    "sk-no-key-required", "no-api-key", "not-needed", "not_needed", "notneeded", "placeholder", "changeme",
    "change-me", "password", "your-api-key", "your_api_key", "sk-dummy", "lm-studio", "llamacpp",
})
"""Values of 8 or more characters that local servers and their documentation use for "no
key" (compared without letter case; shorter ones, `none`, `EMPTY`, `dummy`, fall under
`MIN_SECRET_LEN`): not secrets, and words of ordinary messages, so not scrubbed either.
A value of one repeated character (`xxxxxxxx`) is one too."""
_secrets: set[str] = set()
_warned: set[str] = set()


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
    if cfg.nli is not None:
        models += cfg.nli.models()  # the chat models its kind names (none for most)
    if cfg.judge is not None:
        models += [j.model for j in cfg.judge.judges if j.model is not None]
    # only the configs of a model behind an API hold a key name (spec.OpenAICompatConfig,
    # and the scripted double standing in for one)
    return sorted({m.api_key_env for m in models if "api_key_env" in type(m).model_fields and m.api_key_env})


OPERATOR_GROUPS = ("model", "judge", "nli", "embedder", "runtime")
"""The parts of a composed config only the operator sets (a spec cannot): where a `*_env`
key names a variable. The spec's own parts (stimuli, factors...) are not read: a spec
author could otherwise name `PATH` and have its value withheld and scrubbed."""


def config_env_names(cfg: Any) -> list[str]:
    """The value of every `*_env` key anywhere in the operator's parts of a composed
    config (every model, judge, NLI model, embedder, at any depth): the names of the
    variables that hold its secrets. Walked generically, so a key added later is covered
    without a change here; a suite's members are each composed, and each watched."""
    if hasattr(cfg, "model_dump"):
        cfg = cfg.model_dump()
    if not isinstance(cfg, dict):
        return []
    out: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and k.endswith("_env") and isinstance(v, str) and v:
                    out.add(v)
                else:
                    walk(v)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v)

    for group in OPERATOR_GROUPS:
        walk(cfg.get(group))
    return sorted(out)


_withheld: set[str] = set()
"""Names of the variables a config names as holding a secret: kept from child processes
(a managed engine needs none of them), whatever the name looks like."""


def withheld_env_names() -> frozenset[str]:
    return frozenset(_withheld)


def watch_env(names: Iterable[str]) -> None:
    for name in names:
        _withheld.add(name)
        watch_key(name, os.environ.get(name))


def too_plain(value: str) -> str | None:
    """Why a value is not scrubbed (too short, or a placeholder), or None: it is."""
    if len(value) < MIN_SECRET_LEN:
        return f"is under {MIN_SECRET_LEN} characters, too short to be a real key"
    if value.strip().lower() in PLACEHOLDERS or len(set(value)) == 1:
        return "is a placeholder that local servers accept for no key"
    return None


def watch_value(value: str | None) -> None:
    """Scrub this value from everything written from now on (not a short value or a
    placeholder: see `watch_key`)."""
    if value and too_plain(value) is None:
        _secrets.add(value)


def watch_key(name: str, value: str | None) -> None:
    """Scrub the key held by variable `name` from everything written from now on; a
    value too short or too plain to scrub without rewriting ordinary words in messages is
    left alone, with one warning naming the variable (never the value)."""
    if not value:
        return
    why = too_plain(value)
    if why is None:
        _secrets.add(value)
    elif name not in _warned:
        _warned.add(name)
        log.warning("the value of %s %s: it is not scrubbed from messages and files (that would rewrite ordinary "
                    "words); if it is a real key, use a longer one", name, why)


def watch_config(cfg: Any) -> None:
    watch_env(sorted({*key_env_names(cfg), *config_env_names(cfg)}))
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
    _withheld.clear()
    _warned.clear()
