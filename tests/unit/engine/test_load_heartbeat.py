"""A model load that runs long says so while it runs (issue 41, section 3: the one-time GGUF
conversion was announced as "about 40 s" and took 157 s with nothing said meanwhile)."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from biasaudit.engine import executor
from biasaudit.records.execution import ExecutionStats


class _Store:
    def __init__(self, last: float | None) -> None:
        self.last = last

    def throughput(self, identity: Any, kind: str, last: int = 1) -> Any:
        return None if self.last is None else type("T", (), {"seconds": self.last})()

    def record_throughput(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("last", [None, 2.0])
def test_a_slow_load_prints_a_line_while_it_runs(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                                 last: float | None) -> None:
    monkeypatch.setattr(executor, "LOAD_HEARTBEAT_S", 0.05)
    backend = object()

    def slow() -> Any:
        time.sleep(0.4)
        return backend

    with caplog.at_level(logging.INFO):
        got = executor._load(slow, _Store(last), {"m": 1}, "run", "the model", "first note", ExecutionStats())
    assert got is backend
    beats = [r.getMessage() for r in caplog.records if "still loading" in r.getMessage()]
    assert len(beats) >= 3, [r.getMessage() for r in caplog.records]
    assert "so far" in beats[0]
    assert ("the last load took 2.0 s" in beats[0]) == (last is not None)
    n = len(beats)
    time.sleep(0.2)  # the heartbeat stops with the load
    assert len([r for r in caplog.records if "still loading" in r.getMessage()]) == n


def test_a_quick_load_prints_no_heartbeat(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        executor._load(lambda: object(), _Store(None), None, "run", "the model", "", ExecutionStats())
    assert not [r for r in caplog.records if "still loading" in r.getMessage()]
