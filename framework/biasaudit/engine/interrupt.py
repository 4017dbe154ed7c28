"""Ctrl-C while model calls run: the first press lets the response being delivered be
saved and then stops the run (KeyboardInterrupt at the next response); a second press
stops at once. Either way every response already delivered is in the store, so running
the same command again resumes."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any


class GracefulStop:
    """Context manager: while active (main thread only), SIGINT sets `requested`."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> GracefulStop:
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
        if sys.stderr.isatty():
            print("\nstopping once the response in progress is saved (Ctrl-C again to stop at once)",
                  file=sys.stderr)

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False
