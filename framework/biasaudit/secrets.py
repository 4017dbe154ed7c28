"""API keys: read only from the environment variables a config names (`api_key_env`),
and scrubbed from everything biasaudit writes.

Backends never put a key in an error on purpose, but a server may echo the
Authorization header in an error body, and a bug may format a header into a message.
So the values of every `api_key_env` variable of the run are registered here, and
response errors and outputs (before they reach the store, the trail or a report) and
log records are scrubbed of them: a second line of defence, not the first.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"
# Shorter values are not treated as secrets: scrubbing them would mangle ordinary text.
MIN_SECRET_LEN = 8
_secrets: set[str] = set()


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
        value = os.environ.get(name)
        if value and len(value) >= MIN_SECRET_LEN:
            _secrets.add(value)


def watch_config(cfg: Any) -> None:
    watch_env(key_env_names(cfg))
    guard_logging()


def redact(text: str) -> str:
    for s in _secrets:
        if s in text:
            text = text.replace(s, REDACTED)
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
