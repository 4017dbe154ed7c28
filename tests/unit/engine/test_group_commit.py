"""Group commit (issue 42): answers a backend holds together (a finished batch) are
written in one transaction as soon as they are in hand, and a run SIGKILLed in the middle
of storing such a group resumes asking again exactly the answers that were not written:
none written is asked twice, none is lost."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from biasaudit.backends.base import Emit, run_in_batches
from biasaudit.engine.executor import execute_requests
from biasaudit.plan import Request
from biasaudit.store import Store

REPO = Path(__file__).resolve().parents[3]


def _requests(n: int) -> dict[str, Request]:
    return {f"k{i:04d}": Request(key=f"k{i:04d}", kind="generate",
                                 messages=[{"role": "user", "content": f"question {i}"}]) for i in range(n)}


class _Batched:
    """A local model's shape: answers batch by batch (`run_in_batches`), each batch
    emitted once it is whole."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.asked: list[str] = []

    def execute(self, requests: list[Request], emit: Emit) -> None:
        def answer(batch: list[Request]) -> list[dict[str, object]]:
            self.asked += [r.key for r in batch]
            return [{"text": f"answer {r.key}", "finish_reason": "stop", "output_tokens": 2} for r in batch]

        run_in_batches(requests, self.size, answer, emit)

    def close(self) -> None:
        pass


def test_each_finished_batch_is_one_transaction(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.sqlite")
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    backend = _Batched(8)
    results, stats = execute_requests(_requests(20), store, lambda: backend, progress=False)
    assert stats.calls == 20 and len(results) == 20
    writes = [s for s in statements if s.startswith(("INSERT OR REPLACE INTO responses", "BEGIN", "COMMIT"))]
    # batches of 8, 8 and 4: each opened, its answers written, committed
    expected = []
    for n in (8, 8, 4):
        expected += ["BEGIN IMMEDIATE", *["INSERT"] * n, "COMMIT"]
    assert [w.split(" (")[0].replace("INSERT OR REPLACE INTO responses", "INSERT") for w in writes] == expected
    assert store.count() == 20


def test_a_group_commits_what_it_wrote_when_ctrl_c_ends_it_and_rolls_back_on_a_database_error(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.sqlite")
    reqs = list(_requests(3).values())
    from biasaudit.records.responses import Response

    with pytest.raises(KeyboardInterrupt), store.together():
        store.put(reqs[0], Response(key=reqs[0].key, status="ok", output={"text": "a"}))
        raise KeyboardInterrupt
    assert store.count() == 1 and not store.db.in_transaction
    with pytest.raises(sqlite3.DatabaseError), store.together():
        store.put(reqs[1], Response(key=reqs[1].key, status="ok", output={"text": "b"}))
        store.db.execute("INSERT INTO no_such_table VALUES (1)")
    assert store.count() == 1 and not store.db.in_transaction


_CHILD = textwrap.dedent('''
    import os, signal, sys
    sys.path.insert(0, {repo!r})
    from pathlib import Path
    from biasaudit.backends.base import run_in_batches
    from biasaudit.engine.executor import execute_requests
    from biasaudit.plan import Request
    from biasaudit.store import Store

    log, cache, kill_at = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    reqs = {{f"k{{i:04d}}": Request(key=f"k{{i:04d}}", kind="generate",
                                 messages=[{{"role": "user", "content": f"question {{i}}"}}]) for i in range(40)}}
    emitted = 0

    class Killed:
        def execute(self, requests, emit):
            def answer(batch):
                with log.open("a") as f:
                    f.writelines(r.key + "\\n" for r in batch)
                return [{{"text": "answer " + r.key, "finish_reason": "stop", "output_tokens": 2}} for r in batch]

            def emit_or_die(resp):
                global emitted
                if emitted == kill_at:  # in the middle of storing a finished batch
                    os.kill(os.getpid(), signal.SIGKILL)
                emitted += 1
                emit(resp)

            run_in_batches(requests, 6, answer, emit_or_die)

        def close(self):
            pass

    execute_requests(reqs, Store(cache), Killed, progress=False)
''')


def _asked(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


@pytest.mark.serial  # a process SIGKILLed on purpose: alone, not beside another test's processes
@pytest.mark.parametrize("kill_at", [3, 15, 31])
def test_sigkill_while_a_batch_is_stored_then_resume_asks_only_what_was_not_written(tmp_path: Path,
                                                                                  kill_at: int) -> None:
    child = tmp_path / "child.py"
    child.write_text(_CHILD.format(repo=str(REPO / "framework")))
    log, cache = tmp_path / "asked.log", tmp_path / "c.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO / "framework")}
    killed = subprocess.run([sys.executable, str(child), str(log), str(cache), str(kill_at)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    asked_before = _asked(log)
    with sqlite3.connect(cache) as db:
        written = {r[0] for r in db.execute("SELECT key FROM responses")}
    # the batch being stored when the kill came was written whole or not at all
    assert len(written) == kill_at // 6 * 6
    assert written <= set(asked_before)
    log.unlink()

    store = Store(cache)
    backend = _Batched(6)
    results, stats = execute_requests(_requests(40), store, lambda: backend, progress=False)
    assert not set(backend.asked) & written  # nothing written is asked again
    assert set(backend.asked) | written == set(_requests(40))  # nothing is lost
    assert len(backend.asked) == len(set(backend.asked)) == stats.calls
    assert stats.cache_hits == len(written) and len(results) == 40 and store.count() == 40
    assert all(results[k].output == {"text": f"answer {k}", "finish_reason": "stop", "output_tokens": 2}
               for k in results)


@pytest.mark.parametrize("req", [
    Request(key="a", kind="generate", messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "é \u2028"}],
            params={"max_tokens": 8, "temperature": 0.0}),
    Request(key="b", kind="sequence_logprob", text="The doctor said", sample=2),
    Request(key="c", kind="classify_nli", text="p", text_pair="h"),
    Request(key="d", kind="generate", messages=[{"role": "user", "content": "x"}],
            stimulus={"id": "s1", "fields": {"name": "A"}, "levels": {"g": "f"}}),
])
def test_stored_request_text_is_the_pydantic_dump_byte_for_byte(tmp_path: Path, req: Request) -> None:
    from biasaudit.plan import canonical_json
    from biasaudit.records.responses import Response

    store = Store(tmp_path / "c.sqlite")
    store.put(req, Response(key=req.key, status="ok", output={"text": "t"}))
    [(text,)] = store.db.execute("SELECT request FROM responses").fetchall()
    assert text == canonical_json(req.model_dump(exclude={"key"}))


def test_throughput_counted_as_answers_are_stored_equals_the_plan_estimate(tmp_path: Path) -> None:
    from biasaudit.plan import estimated_tokens

    store = Store(tmp_path / "c.sqlite")
    reqs = _requests(20)
    identity = {"backend": "test", "name": "batched"}
    execute_requests(reqs, store, lambda: _Batched(8), progress=False, identity=identity)
    rate = store.throughput(identity, "generate")
    assert rate is not None
    assert (rate.calls, rate.input_tokens, rate.output_tokens) == (
        20, sum(estimated_tokens(r)[0] for r in reqs.values()), 2 * 20)


def _scripted_writes(tmp_path: Path, script: dict[str, object], n: int) -> list[str]:
    from biasaudit.backends.scripted import ScriptedBackend

    store = Store(tmp_path / "c.sqlite")
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    results, stats = execute_requests(_requests(n), store, lambda: ScriptedBackend(script, batch_size=4),
                                      progress=False)
    assert stats.calls == n and len(results) == n
    marks = {"BEGIN": "B", "COMMIT": "C", "INSERT OR REPLACE INTO responses": "I"}
    return [m for s in statements for p, m in marks.items() if s.startswith(p)]


def test_the_scripted_double_hands_over_a_batch_at_a_time(tmp_path: Path) -> None:
    """The instant backend answers `batch_size` calls, then hands them over in one write,
    as a local model's batch (issue 42: a commit a request was most of its run stage)."""
    assert "".join(_scripted_writes(tmp_path, {}, 10)) == "BIIIIC" "BIIIIC" "BIIC"


def test_the_scripted_double_with_a_kill_hands_over_each_answer_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`die_after` counts answers committed one by one: each answer is written before the
    next call (a `die_after: n` kill leaves exactly n answers stored)."""
    import biasaudit.backends.scripted as scripted

    monkeypatch.setattr(scripted, "_die_after", None)
    assert "".join(_scripted_writes(tmp_path, {"die_after": 10_000, "die_shard": 9}, 3)) == "BIC" * 3
