"""Provider batch APIs (`runtime.batch`, issue 43 section 1) against a local fake that
speaks OpenAI's Batch API and Anthropic's Message Batches (tests/support/batch_server.py):
answers stored with their batch id, partial failures and expiry counted by kind and
retried as asked, never dropped, and a run stopped between submit and results resuming by
polling the same batch (submits counted at the server)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from biasaudit.backends.batch_anthropic import AnthropicBatches
from biasaudit.backends.openai_compat import OpenAICompatBackend, _identity
from biasaudit.engine.batch import BatchRun
from biasaudit.engine.executor import execute_requests
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.responses import Response
from biasaudit.spec import OpenAICompatConfig, RuntimeConfig
from biasaudit.store import Store
from biasaudit.store.batches import BatchLedger
from tests.support.batch_server import BatchServer


def _requests(n: int) -> dict[str, Request]:
    out = {}
    for i in range(n):
        prompt = f"prompt {i}: do you agree?"
        key = hashlib.sha256(prompt.encode()).hexdigest()
        out[key] = Request(key=key, kind="generate", messages=[{"role": "user", "content": prompt}],
                           params={"max_tokens": 20, "temperature": 0.0})
    return out


def _runtime(**batch: Any) -> RuntimeConfig:
    return RuntimeConfig.model_validate({"batch": {"enabled": True, "poll_s": 0.01, "max_poll_s": 0.02, **batch}})


def _openai(server: BatchServer, rt: RuntimeConfig) -> tuple[OpenAICompatBackend, dict[str, Any]]:
    cfg = OpenAICompatConfig(backend="openai_compat", name="hosted", base_url=server.url, model="gpt-fake",
                             api_key_env=None)
    return OpenAICompatBackend(cfg, rt), _identity(cfg)


# prompt i -> its fate at each attempt (a batch holding it): 1 refused for good (400), 2 a
# 500 then an answer, 3 expired then an answer, 4 expired every time; the rest answer.
def _fate(prompt: str, attempt: int) -> str:
    i = int(prompt.split()[1].rstrip(":"))
    return {1: "bad_request", 2: "server_error" if attempt == 1 else "ok",
            3: "expired" if attempt == 1 else "ok", 4: "expired"}.get(i, "ok")


def test_openai_batch_answers_and_partial_failures_counted_and_retried(tmp_path: Path) -> None:
    reqs = _requests(8)
    with BatchServer(_fate) as server:
        backend, ident = _openai(server, _runtime(retry=1))
        store = Store(tmp_path / "c.sqlite")
        results, stats = execute_requests(reqs, store, lambda: backend, identity=ident, progress=False)
    # one batch of 8, then one of the 3 that failed for a passing reason (500, expired x2)
    assert server.submits["openai"] == 2
    assert [len(b["requests"]) for b in server.batches.values()] == [8, 3]
    failed = {k: r for k, r in results.items() if r.status == "failed"}
    # prompt 1: a 400, final at once; prompt 4: expired in both batches, past retry=1
    assert sorted(r.error_kind or "" for r in failed.values()) == ["batch_expired", "http_error"]
    assert stats.failures_by_kind == {"batch_expired": 1, "http_error": 1}
    assert (stats.answered, stats.failures, stats.calls) == (6, 2, 8)
    [b0, b1] = server.batches
    ok = [r for r in results.values() if r.ok]
    assert sorted(r.field("batch") for r in ok) == [b0] * 4 + [b1] * 2
    assert (stats.batch_answers, stats.batch_ids, stats.batch_submitted) == (6, [b0, b1], [b0, b1])
    # sent back once: prompt 2 (a 500), prompts 3 and 4 (expired)
    assert stats.batch_retried == {"batch_expired": 2, "server_error": 1}
    # the answer is what a direct call gives: text, usage from the provider
    assert all(r.output is not None and r.output["usage"] == {"input_tokens": 100, "output_tokens": 20} for r in ok)
    expired = next(r for r in failed.values() if r.error_kind == "batch_expired")
    assert expired.attempts == 2 and "after 2 batches" in (expired.error or "")
    # the cache has every answer and failure: none dropped
    assert store.count() == 8
    # a rerun answers from the cache: nothing submitted
    _, again = execute_requests(reqs, store, lambda: backend, identity=ident, progress=False)
    assert server.submits["openai"] == 2 and again.cache_hits == 8


def test_retry_zero_records_passing_failures_at_once(tmp_path: Path) -> None:
    reqs = _requests(5)
    with BatchServer(_fate) as server:
        backend, ident = _openai(server, _runtime(retry=0))
        results, stats = execute_requests(reqs, Store(tmp_path / "c.sqlite"), lambda: backend, identity=ident,
                                          progress=False)
    assert server.submits["openai"] == 1
    assert stats.failures_by_kind == {"batch_expired": 2, "http_error": 1, "server_error": 1}
    assert stats.answered == 1


def test_batches_are_split_within_the_request_limit(tmp_path: Path) -> None:
    reqs = _requests(7)
    with BatchServer() as server:
        backend, ident = _openai(server, _runtime(max_requests=3))
        _, stats = execute_requests(reqs, Store(tmp_path / "c.sqlite"), lambda: backend, identity=ident, progress=False)
    assert [len(b["requests"]) for b in server.batches.values()] == [3, 3, 1]
    assert stats.answered == 7 and stats.batch_answers == 7


def test_a_stopped_openai_run_resumes_by_polling_the_same_batch(tmp_path: Path) -> None:
    reqs = _requests(4)
    with BatchServer(release=False) as server:
        backend, ident = _openai(server, _runtime(max_wait_s=0.05))
        store = Store(tmp_path / "c.sqlite")
        with pytest.raises(BackendError, match="still running"):
            execute_requests(reqs, store, lambda: backend, identity=ident, progress=False)
        assert server.submits["openai"] == 1 and store.count() == 0
        server.release.set()
        backend2, _ = _openai(server, _runtime())
        results, stats = execute_requests(reqs, store, lambda: backend2, identity=ident, progress=False)
    assert server.submits["openai"] == 1  # polled, not submitted again
    assert stats.answered == 4 and stats.batch_submitted == []
    assert all(server.served[k] == 1 for k in reqs)  # each answer read once


def _anthropic_run(server: BatchServer, store: Store, reqs: dict[str, Request], rt: RuntimeConfig) -> dict[str, Response]:
    provider = AnthropicBatches(base_url=server.url, api_key="sk-ant-test", model="claude-fake", runtime=rt)
    got: dict[str, Response] = {}

    def emit(r: Response) -> None:
        store.put(reqs[r.key], r)
        got[r.key] = r

    BatchRun(provider, store, rt.batch, {"backend": "anthropic", "model": "claude-fake"}, emit).run(list(reqs.values()))
    return got


def test_anthropic_message_batches_partial_failures_expiry_and_retry(tmp_path: Path) -> None:
    reqs = _requests(6)
    with BatchServer(_fate) as server:
        got = _anthropic_run(server, Store(tmp_path / "c.sqlite"), reqs, _runtime(retry=1))
    assert server.submits["anthropic"] == 2
    kinds = sorted(r.error_kind or "" for r in got.values() if r.status == "failed")
    assert kinds == ["batch_expired", "http_error"]  # 400 at once; expired twice
    ok = [r for r in got.values() if r.ok]
    assert len(ok) == 4 and all(r.output and r.output["usage"] == {"input_tokens": 100, "output_tokens": 20} for r in ok)
    assert len(got) == 6


def test_anthropic_run_stopped_after_submit_resumes_without_a_second_submit(tmp_path: Path) -> None:
    reqs = _requests(3)
    store = Store(tmp_path / "c.sqlite")
    with BatchServer(release=False) as server:
        with pytest.raises(BackendError, match="still running"):
            _anthropic_run(server, store, reqs, _runtime(max_wait_s=0.05))
        [bid] = server.batches
        assert [b.batch_id for b in BatchLedger(store).open_batches(
            __import__("biasaudit.engine.batch", fromlist=["model_key"]).model_key(
                {"backend": "anthropic", "model": "claude-fake"}), "anthropic")] == [bid]
        server.release.set()
        got = _anthropic_run(server, store, reqs, _runtime())
    assert server.submits["anthropic"] == 1 and len(got) == 3 and all(r.ok for r in got.values())
    assert all(server.served[k] == 1 for k in reqs)


def test_openai_file_lines_have_the_documented_shape(tmp_path: Path) -> None:
    reqs = _requests(2)
    with BatchServer() as server:
        backend, ident = _openai(server, _runtime())
        execute_requests(reqs, Store(tmp_path / "c.sqlite"), lambda: backend, identity=ident, progress=False)
        [data] = [v for k, v in server.files.items() if k.startswith("file-in")]
    lines = [json.loads(x) for x in data.splitlines()]
    assert {tuple(sorted(x)) for x in lines} == {("body", "custom_id", "method", "url")}
    assert {x["url"] for x in lines} == {"/v1/chat/completions"} and {x["custom_id"] for x in lines} == set(reqs)
    assert all(x["body"]["model"] == "gpt-fake" and x["body"]["max_tokens"] == 20 for x in lines)


def test_result_lines_are_read_within_their_limits() -> None:
    import gzip

    from biasaudit.backends.http_limits import BodyTooLarge, bounded_lines

    def chunks(data: bytes, n: int = 4096) -> list[bytes]:
        return [data[i:i + n] for i in range(0, len(data), n)]

    body = b"".join(b'{"n": %d}\n' % i for i in range(100))
    assert [json.loads(x)["n"] for x in bounded_lines(chunks(gzip.compress(body)), "gzip", 100, 10_000)] == list(range(100))
    # a gzip bomb: 50 MB of one line in ~50 KB; stopped at the line limit, never inflated whole
    bomb = gzip.compress(b"a" * 50_000_000)
    assert len(bomb) < 100_000
    with pytest.raises(BodyTooLarge, match="a line longer than 1000 bytes"):
        list(bounded_lines(chunks(bomb), "gzip", 1000, 10**12))
    with pytest.raises(BodyTooLarge, match="body larger than 500 bytes"):
        list(bounded_lines(chunks(body), "", 100, 500))
    with pytest.raises(BodyTooLarge, match="unsupported Content-Encoding"):
        list(bounded_lines([body], "br", 100, 500))


def test_results_past_the_size_limit_stop_the_run_in_one_line_and_keep_the_batch(tmp_path: Path) -> None:
    reqs = _requests(3)
    with BatchServer() as server:
        backend, ident = _openai(server, _runtime(max_result_bytes=1000))
        store = Store(tmp_path / "c.sqlite")
        with pytest.raises(BackendError, match="results cannot be read") as exc:
            execute_requests(reqs, store, lambda: backend, identity=ident, progress=False)
        assert exc.value.key == "runtime.batch.max_result_bytes"
        # raised, and read again without a second submit
        backend2, _ = _openai(server, _runtime())
        _, stats = execute_requests(reqs, store, lambda: backend2, identity=ident, progress=False)
    assert server.submits["openai"] == 1 and stats.answered == 3


def test_an_unusable_answer_in_the_output_file_is_a_failure_of_its_kind(tmp_path: Path) -> None:
    """A 200 line whose message is empty is read by the same parser as a direct call:
    an `empty` failure, final (not sent back into a batch), stored with its batch's attempt."""
    reqs = _requests(3)
    with BatchServer(lambda prompt, attempt: "empty" if prompt.startswith("prompt 0:") else "ok") as server:
        backend, ident = _openai(server, _runtime(retry=2))
        results, stats = execute_requests(reqs, Store(tmp_path / "c.sqlite"), lambda: backend, identity=ident,
                                          progress=False)
    assert server.submits["openai"] == 1
    assert stats.failures_by_kind == {"empty": 1} and stats.answered == 2
    [bad] = [r for r in results.values() if r.status == "failed"]
    assert bad.error is not None and bad.error.startswith("empty content")


# --- runtime.budget through a batch (the coordinator's merge of the batch and budget work)

def _all_ok(prompt: str, attempt: int) -> str:
    return "ok"


def _budget(**limits: Any) -> Any:
    from biasaudit.engine.budget import Budget
    from biasaudit.spec import BudgetConfig
    from biasaudit.spec.model_configs import ModelPrice

    price = ModelPrice(input_per_million=1000.0, output_per_million=1000.0, batch_discount=0.5)
    return Budget(BudgetConfig(**limits), price, window=2)


def test_a_budget_caps_what_a_batch_carries_and_the_rest_is_not_sent(tmp_path: Path) -> None:
    reqs = _requests(8)  # each reserved at its worst case: 20 output tokens (max_tokens)
    budget = _budget(output_tokens=70)
    with BatchServer(_all_ok) as server:
        backend, ident = _openai(server, _runtime())
        store = Store(tmp_path / "c.sqlite")
        results, stats = execute_requests(reqs, store, lambda: backend, identity=ident, progress=False,
                                          budget=budget)
    # 3 x 20 = 60 <= 70 < 80: one batch of 3, the other 5 never sent (no second submit)
    assert server.submits["openai"] == 1
    assert [len(b["requests"]) for b in server.batches.values()] == [3]
    assert (len(results), stats.batch_answers) == (3, 3)
    assert budget.stopped and budget.calls_not_made == 5
    assert budget.stopped_by == "runtime.budget.output_tokens"
    # settled at what the provider reported: 3 x (100 in, 20 out)
    assert budget.spent == [300, 60]


def test_a_budget_counts_money_at_the_batch_price(tmp_path: Path) -> None:
    reqs = _requests(8)
    # price 1000/M both ways. Each request's worst case is 5 input tokens (23 characters / 4)
    # and 20 output (max_tokens): 0.025 at full price, 0.0125 at the batch price (0.5).
    # With money 0.09 a full-price reading would send 3 (0.075 <= 0.09 < 0.1); at the batch
    # price it sends 7 (0.0875 <= 0.09 < 0.1).
    budget = _budget(money=0.09)
    with BatchServer(_all_ok) as server:
        backend, ident = _openai(server, _runtime())
        store = Store(tmp_path / "c.sqlite")
        results, _ = execute_requests(reqs, store, lambda: backend, identity=ident, progress=False,
                                      budget=budget)
    assert server.submits["openai"] == 1
    assert len(results) == 7 and budget.calls_not_made == 1
    # settled at the usage the fake reports (100 in, 20 out) at the batch price: more than
    # the estimate, so over the limit. A batch is one window, all of it in flight: the
    # overshoot docs/models-and-servers.md ("Budgets") warns of
    assert budget.money(*budget.spent) == pytest.approx(7 * (100 + 20) * 1000 / 1e6 * 0.5)
