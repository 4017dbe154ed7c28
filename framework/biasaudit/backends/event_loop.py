"""The bridge between a served backend's asyncio loop and the run's own thread, shared by
the OpenAI-compatible and Anthropic backends.

The requests run on an event loop in a helper thread and every answer is handed back on
the caller's thread: SQLite connections are bound to the thread that opened them, a caller
may already run a loop (a notebook), and Ctrl-C, which Python delivers to the main thread,
then stops the loop by cancelling its tasks instead of raising inside one of them (which
left "Task exception was never retrieved")."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from biasaudit._util import interrupt
from biasaudit.backends.base import Emit, Response, together
from biasaudit.plan import Request

STOP_POLL_S = 0.25
"""How often the caller's thread looks for a stop request while it waits for answers."""

GROUP_MAX = 1000
"""At most this many queued answers are written in one transaction."""

Put = Callable[[Response], None]
Runner = Callable[[list[Request], Put, threading.Event], Awaitable[None]]
"""A backend's `_run`: answers the requests on the loop, handing each to `put`; stops
starting new ones once the event is set."""


def emit_from_loop(run: Runner, requests: Sequence[Request], emit: Emit, *, name: str) -> None:
    """Run `run` on an event loop in a thread named `name` and call `emit` with each
    answer here, on the caller's thread, as it completes."""
    reqs = list(requests)
    if not reqs:
        return
    done = object()
    results: queue.Queue[Any] = queue.Queue()
    stop = threading.Event()
    running: dict[str, Any] = {}

    async def main() -> None:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        if stop.is_set():
            return
        await run(reqs, results.put, stop)

    def target() -> None:
        try:
            asyncio.run(main())
        except asyncio.CancelledError:  # stopped by the caller
            pass
        except BaseException as exc:  # handed to the caller's thread below
            results.put(exc)
        results.put(done)

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    try:
        finished = False
        while not finished:
            # the answers already queued arrived together: emitted as one group (one
            # write), none waited for
            group = [next_result(results)]
            while group[-1] is not done and not isinstance(group[-1], BaseException) and len(group) < GROUP_MAX:
                try:
                    group.append(results.get_nowait())
                except queue.Empty:
                    break
            with together():
                for item in group:
                    if item is done:
                        finished = True
                        break
                    if isinstance(item, BaseException):
                        raise item
                    emit(item)
    finally:
        stop.set()
        loop, task = running.get("loop"), running.get("task")
        if thread.is_alive() and loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop has just closed
                pass
        thread.join()


def next_result(results: queue.Queue[Any]) -> Any:
    """The next item from the loop's thread; KeyboardInterrupt once a stop is requested
    (answers still in flight are dropped: they are asked again when the run resumes)."""
    while True:
        interrupt.check()
        try:
            return results.get(timeout=STOP_POLL_S)
        except queue.Empty:
            continue
