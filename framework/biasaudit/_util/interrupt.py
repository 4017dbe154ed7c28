"""The process-wide "stop requested" flag that long work polls.

While model calls run, the engine (`engine.interrupt.GracefulStop`) turns the first Ctrl-C
into this flag instead of an exception raised wherever the main thread happens to be, so
that responses already delivered are committed first. Work that can run for more than a
few seconds without delivering a response (a generation batch, one token at a time; a
scoring batch; waiting for a managed engine to start; an HTTP answer in flight) polls the
flag and raises KeyboardInterrupt itself, dropping its unfinished part: the interrupt then
takes effect within a token step or a poll, not when the batch ends. Outside the engine
the flag is never set and Ctrl-C raises KeyboardInterrupt at once, as Python does.

It lives in `_util` (the lowest layer) so that backends, which the engine calls and may
not import, can poll it."""

from __future__ import annotations

import threading

_requested = threading.Event()


def request() -> None:
    """Ask every poller to stop (the engine's SIGINT handler calls this)."""
    _requested.set()


def clear() -> None:
    _requested.clear()


def requested() -> bool:
    return _requested.is_set()


def check() -> None:
    """Raise KeyboardInterrupt when a stop was requested."""
    if _requested.is_set():
        raise KeyboardInterrupt


__all__ = ["check", "clear", "request", "requested"]
