"""Ctrl-C while model calls run: the first press stops the run within seconds, keeping
every response already delivered (KeyboardInterrupt at the next response, or sooner from
work that polls the stop flag: a generation batch after its current token step, a scoring
batch between its chunks, a managed engine's start-up wait, HTTP answers still in flight;
their unfinished work is dropped and redone on resume); a second press stops at once.
Either way every response already delivered is in the store, so running the same command
again resumes."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

from biasaudit._util import interrupt

# GracefulStops active in this process: the shared flag is cleared when the outermost ends,
# so a later run in the same process (a sweep, a notebook) starts unstopped.
_depth = 0
_depth_lock = threading.Lock()


class GracefulStop:
    """Context manager: while active (main thread only), SIGINT sets `requested` and the
    process-wide flag in `biasaudit._util.interrupt` that long work polls."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None
        self._installed = False
        self._counted = False

    def __enter__(self) -> GracefulStop:
        global _depth
        with _depth_lock:
            if _depth == 0:
                interrupt.clear()
            _depth += 1
            self._counted = True
        if threading.current_thread() is threading.main_thread():
            try:
                self._previous = signal.signal(signal.SIGINT, self._handle)
                self._installed = True
            except ValueError:  # not allowed here (e.g. an embedded interpreter)
                pass
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        interrupt.request()
        if sys.stderr.isatty():
            print("\nstopping: finished responses are kept, work in progress is dropped (Ctrl-C again to stop at once)",
                  file=sys.stderr)

    def check(self) -> None:
        if self.requested or interrupt.requested():
            raise KeyboardInterrupt

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        global _depth
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False
        if self._counted:
            with _depth_lock:
                _depth -= 1
                if _depth == 0:
                    interrupt.clear()
            self._counted = False
