"""Run `biasaudit` in a subprocess that SIGKILLs itself at a named point, for the crash
safety tests: `python -m tests.killpoints <point> <n> run ...`.

Points: `put` (right after the n-th response is committed to the store: subject calls
first, then coding calls; answers the engine writes as one group, a finished batch in
`Store.together`, are committed when the group ends, so the kill waits for that), `code` (entering the coding stage), `measure` (entering the
metric stage, after coding), `write` (entering the n-th report file write),
`finish_run` (after every file is written, before the run is marked finished). Model
calls can also be cut short with the scripted backend's `die_after`.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any


def _kill_on(n: int, fn: Callable[..., Any], after: bool) -> Callable[..., Any]:
    count = 0

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nonlocal count
        count += 1
        if not after and count >= n:
            os.kill(os.getpid(), signal.SIGKILL)
        out = fn(*args, **kwargs)
        if after and count >= n:
            os.kill(os.getpid(), signal.SIGKILL)
        return out

    return wrapped


def _kill_after_commit(n: int) -> None:
    """`put`: SIGKILL right after the n-th response is committed. A put inside a group
    (`Store.together`) is committed when the group ends, so the kill comes then: killing
    between the put and the group's commit would lose the whole group, which is not the
    point named."""
    from contextlib import contextmanager

    from biasaudit.store import Store

    put, together = Store.put, Store.together
    state = {"count": 0, "depth": 0, "pending": False}

    def counted_put(self: Store, *args: Any, **kwargs: Any) -> Any:
        out = put(self, *args, **kwargs)
        state["count"] += 1
        if state["count"] >= n:
            if state["depth"]:
                state["pending"] = True
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        return out

    @contextmanager
    def grouped(self: Store) -> Any:
        state["depth"] += 1
        try:
            with together(self):
                yield
        finally:
            state["depth"] -= 1
        if not state["depth"] and state["pending"]:
            os.kill(os.getpid(), signal.SIGKILL)

    Store.put = counted_put  # type: ignore[method-assign]
    Store.together = grouped  # type: ignore[method-assign,assignment]


def main(argv: list[str]) -> int:
    point, n, rest = argv[0], int(argv[1]), argv[2:]
    import biasaudit.runner.pipeline as pipeline
    from biasaudit.store import Store

    targets: dict[str, tuple[Any, str, bool]] = {
        "put": (Store, "put", True),
        "code": (pipeline, "code", False),
        "measure": (pipeline, "measure", False),
        "write": (pipeline, "_write", False),
        "finish_run": (Store, "finish_run", False),
    }
    if point == "put":
        _kill_after_commit(n)
    else:
        owner, name, after = targets[point]
        setattr(owner, name, _kill_on(n, getattr(owner, name), after))
    from biasaudit.cli.app import main as cli_main

    return cli_main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
