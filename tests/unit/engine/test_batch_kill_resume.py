"""`runtime.batch` end to end through the command line: a `biasaudit run` SIGKILLed after
the fake OpenAI batch server saw its submit (and its first poll), then run again, polls the
same batch and never submits a second one; no finished answer is read twice; the partial
failure (a 400 in the error file) is counted; the manifest and the report say which
answers came through which batch, and price them at `model.price.batch_discount`."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import operator_conf, read_jsonl, verdict_code, write_spec
from tests.support.batch_server import BatchServer
from tests.unit.runner.test_token_usage import PANEL, SPEC

ROOT = Path(__file__).resolve().parents[3]


def _fate(prompt: str, attempt: int) -> str:
    return "bad_request" if "town 3 " in prompt else "ok"


def _args(workdir: Path, url: str) -> list[str]:
    rows = ["statement,category"] + [f"People from town {i} are careful with money.,town" for i in range(5)]
    (workdir / "statements.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = write_spec(workdir / "tokens.yaml", SPEC)
    return [f"spec={spec}", *operator_conf(workdir, judge=PANEL), "model=openai_compat", f"model.base_url={url}",
            "model.api_key_env=null", "model.name=hosted", "+model.price.input_per_million=2.5",
            "+model.price.output_per_million=10", "+model.price.batch_discount=0.5",
            "runtime.batch.enabled=true", "runtime.batch.poll_s=0.05", "runtime.batch.max_poll_s=0.1",
            *isolation(workdir)]


def _cmd(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "biasaudit.cli.app", "run", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "framework") + os.pathsep + str(ROOT)}


@pytest.mark.slow  # two subprocess runs
@pytest.mark.serial  # a SIGKILLed process: alone, not beside another test's processes
def test_sigkill_between_submit_and_results_then_resume_submits_once(workdir: Path) -> None:
    with BatchServer(_fate, release=False) as server:
        args = _args(workdir, server.url)
        first = subprocess.Popen(_cmd(args), cwd=workdir, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        try:
            assert server.first_poll.wait(120), "the run never polled its batch"
        finally:
            first.send_signal(signal.SIGKILL)
            _, err1 = first.communicate(timeout=60)
        assert first.returncode == -signal.SIGKILL, err1[-2000:]
        assert server.submits["openai"] == 1
        db = sqlite3.connect(workdir / "cache.sqlite")
        [(bid, status)] = db.execute("SELECT batch_id, status FROM batches").fetchall()
        assert status == "open" and db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 0
        db.close()
        server.release.set()  # the provider finishes the batch while no client runs
        second = subprocess.run(_cmd(args), cwd=workdir, env=_env(), capture_output=True, text=True, timeout=300)
    assert server.submits["openai"] == 1  # resumed by polling, never submitted again
    [batch] = server.batches.values()
    assert len(batch["requests"]) == 10
    assert sorted(server.served.values()) == [1] * 10  # each result read once
    [run] = run_dirs(workdir)
    # 2 of 10 requests failed (over validity.max_failed_share): "could not measure", exit 4
    assert second.returncode == verdict_code(run) == 4, second.stderr[-3000:]
    summary: dict[str, Any] = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    ex = summary["execution"]
    # town 3, two tones: refused with a 400 in the batch's error file, stored as failures
    assert (ex["answered"], ex["failures"], ex["failures_by_kind"]) == (8, 2, {"http_error": 2})
    assert (ex["batch_answers"], ex["batch_ids"], ex["batch_submitted"]) == (8, [bid], [])
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["execution"]["batch_answers"] == 8 and manifest["execution"]["batch_ids"] == [bid]
    [t] = summary["cover"]["tokens"]
    # 8 answers x (100 in, 20 out) at 2.5 / 10 per million: 0.002 + 0.0016 = 0.0036; all
    # through the batch, at half price: 0.0018
    assert (t["input_tokens"], t["output_tokens"], t["batch_answers"]) == (800, 160, 8)
    assert t["cost"] == pytest.approx(0.0018)
    assert f"8 of 8 answers through the provider's batch API (batch {bid})" in t["text"]
    assert "the 8 batch answers 0.5 off" in t["text"]
    md = (run / "report.md").read_text(encoding="utf-8")
    assert f"batch API (batch {bid})" in md
    # every stored answer names its batch in the audit trail
    trail = read_jsonl(run / "responses.jsonl")
    assert sum(1 for r in trail if (r.get("output") or {}).get("batch") == bid) >= 8
