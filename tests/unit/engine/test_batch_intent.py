"""The duplicate-submit window of `runtime.batch`: a run killed in the instant between the
provider accepting a batch and the batch id being committed to the cache. The batch's
requests are committed first under a tag sent with the batch (OpenAI: `metadata`), so the
next run lists the provider's batches (GET /v1/batches, paged with `after`/`has_more`),
finds the tag and polls that batch: exactly one submit across the kill and the resume.
An intent the provider never saw is submitted once the whole listing has been read.
Anthropic's Message Batches keep no metadata: there the intent is submitted again, said
in a warning."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from biasaudit.backends.batch_anthropic import AnthropicBatches
from biasaudit.engine.batch import BatchRun, model_key
from biasaudit.engine.executor import execute_requests
from biasaudit.errors import BackendError
from biasaudit.store import Store
from biasaudit.store.batches import BatchLedger
from tests.support.batch_server import BatchServer
from tests.unit.engine.test_batch_api import _openai, _requests, _runtime


class Killed(BaseException):
    """Stands for SIGKILL at that instant: nothing after it runs (not an Exception, so no
    handler of the code under test catches it)."""


def _kill_at_record(monkeypatch: pytest.MonkeyPatch) -> None:
    def record(self: BatchLedger, *args: Any, **kwargs: Any) -> None:
        raise Killed

    monkeypatch.setattr(BatchLedger, "record", record)


def test_a_kill_between_the_providers_answer_and_the_ledger_commit_submits_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reqs = _requests(4)
    with BatchServer() as server:
        server.list_page = 1  # the tag is found on the third page: the paging is followed
        backend, ident = _openai(server, _runtime())
        store = Store(tmp_path / "c.sqlite")
        with monkeypatch.context() as m:
            _kill_at_record(m)
            with pytest.raises(Killed):
                execute_requests(reqs, store, lambda: backend, identity=ident, progress=False)
        assert server.submits["openai"] == 1
        [(bid, b)] = server.batches.items()
        # two batches of another client of the account, submitted after ours (listed first)
        for other in ({"biasaudit_tag": "biasaudit-someone-else"}, None):
            server.batches[f"batch_x{len(server.batches)}"] = {
                "kind": "openai", "endpoint": "/v1/chat/completions", "input_file_id": "file-none",
                "metadata": other, "created_at": b["created_at"], "requests": []}
        backend2, _ = _openai(server, _runtime())
        results, stats = execute_requests(reqs, Store(tmp_path / "c.sqlite"), lambda: backend2, identity=ident,
                                          progress=False)
    assert server.submits["openai"] == 1  # adopted by its tag, not submitted again
    assert server.lists["openai"] == 3 and set(b["metadata"] or {}) == {"biasaudit_tag"}
    assert stats.answered == 4 and all(r.ok and r.field("batch") == bid for r in results.values())
    assert stats.batch_submitted == [] and stats.batch_ids == [bid]
    assert all(server.served[k] == 1 for k in reqs)
    # the intent became the batch: nothing left to look up
    ledger = BatchLedger(Store(tmp_path / "c.sqlite"))
    assert ledger.intents(model_key(ident), "openai") == [] and ledger.submitted(reqs) == 1


def test_an_intent_the_provider_never_saw_is_submitted_once_after_the_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reqs = _requests(3)
    with BatchServer() as server:
        backend, ident = _openai(server, _runtime())
        store = Store(tmp_path / "c.sqlite")
        with monkeypatch.context() as m:  # killed after the intent's commit, before the POST
            def submit(self: Any, lines: Any, tag: str) -> str:
                raise Killed
            m.setattr("biasaudit.backends.batch_openai.OpenAIBatches.submit", submit)
            with pytest.raises(Killed):
                execute_requests(reqs, store, lambda: backend, identity=ident, progress=False)
        assert server.submits["openai"] == 0
        [intent] = BatchLedger(store).intents(model_key(ident), "openai")
        assert set(intent.requests) == set(reqs)
        backend2, _ = _openai(server, _runtime())
        results, stats = execute_requests(reqs, store, lambda: backend2, identity=ident, progress=False)
        assert server.lists["openai"] == 1
        [b] = server.batches.values()
    assert server.submits["openai"] == 1 and b["metadata"] == {"biasaudit_tag": intent.tag}
    assert stats.answered == 3 and len(stats.batch_submitted) == 1


def test_an_unreadable_listing_submits_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reqs = _requests(2)
    with BatchServer() as server:
        backend, ident = _openai(server, _runtime())
        store = Store(tmp_path / "c.sqlite")
        with monkeypatch.context() as m:
            _kill_at_record(m)
            with pytest.raises(Killed):
                execute_requests(reqs, store, lambda: backend, identity=ident, progress=False)
        backend2, _ = _openai(server, _runtime())
        backend2.cfg = backend2.cfg.model_copy(update={"base_url": server.url + "/nowhere"})
        with pytest.raises(BackendError, match="cannot be listed now"):
            execute_requests(reqs, store, lambda: backend2, identity=ident, progress=False)
    assert server.submits["openai"] == 1


def test_anthropic_cannot_be_looked_up_so_the_intent_is_submitted_again_with_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    reqs = _requests(2)
    rt = _runtime()
    ident = {"backend": "anthropic", "model": "claude-fake"}
    store = Store(tmp_path / "c.sqlite")
    with BatchServer() as server:
        def run() -> None:
            provider = AnthropicBatches(base_url=server.url, api_key="k", model="claude-fake", runtime=rt)
            BatchRun(provider, store, rt.batch, ident, lambda r: store.put(reqs[r.key], r)).run(list(reqs.values()))

        with monkeypatch.context() as m:
            _kill_at_record(m)
            with pytest.raises(Killed):
                run()
        with caplog.at_level(logging.WARNING):
            run()
    # the documented limit: two submits, and the user told so
    assert server.submits["anthropic"] == 2
    assert "cannot be looked up by a tag" in caplog.text and "paid twice" in caplog.text


# A `biasaudit run` SIGKILLed at the instant the ledger would keep the batch id (the
# provider has accepted the batch): the record call sends SIGKILL to its own process.
_KILLED_AT_RECORD = """
import os, signal, sys
from biasaudit.store.batches import BatchLedger
BatchLedger.record = lambda self, *a, **k: os.kill(os.getpid(), signal.SIGKILL)
from biasaudit.cli.app import main
sys.exit(main(["run", *sys.argv[1:]]))
"""


@pytest.mark.slow  # two subprocess runs
@pytest.mark.serial  # a SIGKILLed process: alone, not beside another test's processes
def test_sigkill_between_the_submit_and_the_ledger_commit_then_resume_submits_once(workdir: Path) -> None:
    import sqlite3
    import subprocess
    import sys

    from tests.unit.engine.test_batch_kill_resume import _args, _cmd, _env

    with BatchServer() as server:
        args = _args(workdir, server.url)
        first = subprocess.run([sys.executable, "-c", _KILLED_AT_RECORD, *args], cwd=workdir, env=_env(),
                               capture_output=True, text=True, timeout=300)
        assert first.returncode == -9, first.stderr[-2000:]
        assert server.submits["openai"] == 1
        db = sqlite3.connect(workdir / "cache.sqlite")
        [(tag, status)] = db.execute("SELECT batch_id, status FROM batches").fetchall()
        db.close()
        assert status == "intent"  # the id never reached the cache
        second = subprocess.run(_cmd(args), cwd=workdir, env=_env(), capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-3000:]  # every answer came: measured, PASS
    assert "found at openai by its tag: polled, not submitted again" in second.stderr
    assert server.submits["openai"] == 1  # found by its tag, polled, not submitted again
    [(bid, b)] = server.batches.items()
    assert b["metadata"] == {"biasaudit_tag": tag} and len(b["requests"]) == 10
    assert sorted(server.served.values()) == [1] * 10
