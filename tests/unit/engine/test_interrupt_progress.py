"""Long generation batches: progress per token step before any row of the batch ends, and
a Ctrl-C that takes effect within a token step (not when the batch ends), keeping the
responses already delivered and dropping the batch in progress, so a resume asks again
for exactly the requests that were not finished. The scripted backend's `token_delay`
stands in for a local model's batched generation; the real transformers path is checked
on SmolLM2 in tests/integration/test_hf_causal_chat.py."""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from biasaudit._util import interrupt
from biasaudit.backends.scripted import ScriptedBackend
from biasaudit.engine import executor
from biasaudit.engine.executor import execute_requests
from biasaudit.engine.interrupt import GracefulStop
from biasaudit.plan import Request
from biasaudit.store import Store

SLOW = " ".join(["word"] * 600)  # 600 token steps


def _gen(name: str, text: str, max_tokens: int = 1000) -> Request:
    key = hashlib.sha256(name.encode()).hexdigest()
    return Request(key=key, kind="generate", messages=[{"role": "user", "content": text}],
                   params={"temperature": 0.0, "max_tokens": max_tokens})


def _sigint_after(seconds: float) -> threading.Timer:
    """A Ctrl-C (SIGINT to this process; Python runs its handler in the main thread)."""
    t = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    t.daemon = True
    t.start()
    return t


@pytest.mark.serial  # wall-clock bounds
def test_progress_lines_appear_before_the_first_batch_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(executor, "HEARTBEAT_S", 0.2)
    reqs = {r.key: r for r in (_gen("a", "slow a", 64), _gen("b", "slow b", 64))}
    script = {"replies": {"slow": " ".join(["word"] * 40)}, "token_delay": 0.05}  # one batch of about 2 s
    with caplog.at_level(logging.INFO, logger="biasaudit.stage"):
        _, stats = execute_requests(reqs, Store(tmp_path / "c.sqlite"), lambda: ScriptedBackend(script, 2))
    assert stats.calls == 2
    lines = [r.getMessage() for r in caplog.records if r.name == "biasaudit.stage"]
    ticks = [ln for ln in lines if "token" in ln]
    # shown while no row of the batch had ended, each with how long the batch can still take
    assert len(ticks) >= 3, lines
    assert all(ln.startswith("model calls: 0/2 done; generating 2 answers: token ") for ln in ticks), ticks
    assert all("of at most 64" in ln and "this batch ends within" in ln for ln in ticks)
    assert lines.index(ticks[0]) < lines.index("model calls: 2/2 done")


@pytest.mark.serial  # wall-clock bounds
def test_ctrl_c_stops_a_long_batch_within_seconds_and_resume_repeats_no_call(tmp_path: Path) -> None:
    fast = [_gen("f1", "quick 1"), _gen("f2", "quick 2")]
    slow = [_gen("s1", "slow 1"), _gen("s2", "slow 2")]
    reqs = {r.key: r for r in (*fast, *slow)}
    store = Store(tmp_path / "c.sqlite")
    calls = tmp_path / "calls.log"
    # batch 1 (the quick pair) takes 2 steps; batch 2 would take 600 x 0.1 s = 60 s
    script = {"replies": {"quick": "yes indeed", "slow": SLOW}, "token_delay": 0.1, "calls_log": str(calls)}
    t0 = time.monotonic()
    timer = _sigint_after(1.5)
    with pytest.raises(KeyboardInterrupt):
        execute_requests(reqs, store, lambda: ScriptedBackend(script, 2), progress=False)
    took = time.monotonic() - t0
    timer.join()
    assert took < 20, f"the interrupt took {took:.1f} s to take effect (the batch would have taken 60 s)"
    kept = store.get_many(reqs)
    assert sorted(kept) == sorted(r.key for r in fast)  # finished calls kept, the cut batch dropped
    assert all(kept[r.key].output == {"text": "yes indeed", "finish_reason": "stop", "output_tokens": 2} for r in fast)
    assert not interrupt.requested()  # the stop flag does not outlive the run

    # resume: only the dropped batch is asked again
    calls.unlink()
    fresh = {**script, "token_delay": 0.001}
    results, stats = execute_requests(reqs, store, lambda: ScriptedBackend(fresh, 2), progress=False)
    assert stats.cache_hits == 2 and stats.calls == 2
    assert sorted(calls.read_text().split()) == sorted(r.key for r in slow)
    assert all(results[r.key].output["text"] == SLOW for r in slow)  # type: ignore[index]


def test_the_stop_flag_is_set_by_the_first_ctrl_c_only_while_the_engine_runs() -> None:
    assert not interrupt.requested()
    with GracefulStop() as stop:
        signal.raise_signal(signal.SIGINT)  # the first press: a flag, no exception here
        assert stop.requested and interrupt.requested()
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
        with pytest.raises(KeyboardInterrupt):  # the second press stops at once
            signal.raise_signal(signal.SIGINT)
    assert not interrupt.requested()


@pytest.mark.serial  # wall-clock bounds
def test_ctrl_c_while_http_answers_are_in_flight_stops_within_seconds(tmp_path: Path) -> None:
    """A server that takes 30 s per answer: the first Ctrl-C used to wait for the next
    answer to arrive; the caller's thread now polls the stop flag while it waits."""
    from biasaudit.backends.openai_compat import OpenAICompatBackend
    from biasaudit.spec import OpenAICompatConfig, RuntimeConfig
    from tests.support.fault_server import FaultServer

    reqs = {r.key: r for r in (_gen("h1", "hello 1", 8), _gen("h2", "hello 2", 8))}
    store = Store(tmp_path / "c.sqlite")
    with FaultServer(latency=30.0) as server:
        cfg = OpenAICompatConfig(backend="openai_compat", name="t", base_url=server.url, model="m",
                                 api_key_env=None, timeout=120.0, max_retries=0)
        t0 = time.monotonic()
        timer = _sigint_after(1.5)
        with pytest.raises(KeyboardInterrupt):
            execute_requests(reqs, store, lambda: OpenAICompatBackend(cfg, RuntimeConfig()), progress=False)
        took = time.monotonic() - t0
        timer.join()
    assert took < 20, f"the interrupt took {took:.1f} s (each answer takes 30 s)"
    assert store.get_many(reqs) == {}  # answers in flight are dropped, asked again on resume
