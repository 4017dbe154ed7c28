"""Stage messages: one short line as a run moves from stage to stage (planning, loading the
model, model calls, coding, measuring, reporting), so a first-time user sees what it is
doing and how long the slow parts should take.

The library only logs them (logger `biasaudit.stage`, level INFO); the command line shows
them on stderr with `show()`. They go to their own handler, not through the root logger,
so Hydra's job logging (which reformats and files root messages) leaves them alone.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("biasaudit.stage")


def stage(msg: str, *args: object) -> None:
    log.info(msg, *args)


class _Stderr(logging.StreamHandler[Any]):
    """Writes to whatever `sys.stderr` is at the time (tests and tools swap it)."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


def show() -> None:
    """Print stage messages on stderr (idempotent)."""
    if any(isinstance(h, _Stderr) for h in log.handlers):
        return
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("· %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


@contextmanager
def held() -> Iterator[None]:
    """Stage messages held back while checks run, shown once they pass: bad input gets its
    one error line, not the progress of the step it failed in."""
    records: list[logging.LogRecord] = []

    class _Hold(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    saved, propagate = log.handlers[:], log.propagate
    log.handlers = [_Hold()]
    log.propagate = False
    try:
        yield
    finally:
        log.handlers, log.propagate = saved, propagate
    for record in records:  # only reached when the checks passed
        log.handle(record)


def seconds_text(s: float) -> str:
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


__all__ = ["held", "seconds_text", "show", "stage"]
