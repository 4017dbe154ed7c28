"""Issue 11's fault-injection run: `biasaudit run` on model=openai_compat against the
local fault server, 500 requests with about 20% injected faults of every kind a chat
generation can show. Every request ends answered or stored as failed, the counts add up
exactly in summary.json, the report and the store, and only `--retry-failed` sends the
failed ones again."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from biasaudit.runner.pipeline import prepare
from biasaudit.spec.compose import compose
from biasaudit.verdicts.gating import EXIT_UNMEASURED
from tests.conftest import isolation, run_dirs
from tests.helpers import operator_conf, read_jsonl, write_spec
from tests.support.fault_server import (
    CLIENT_KIND,
    GENERATE_KINDS,
    FaultServer,
    mixed_faults,
    prompt_of,
)

N = 500
MAX_RETRIES = 2
SECRET = "sk-e2e-planted-secret-777"
SPEC = """
audit: {name: faults, method: biaxis}
stimuli: {source: statements.csv, format: statements}
factors:
  task:
    bj: {template: "Statement: {{ statement }} Do you agree? Answer Yes or No, then explain."}
  tone:
TONESprobe: {kind: generate, max_tokens: 20}
metrics:
  - {name: biaxis, parser: false}
"""


PANEL = {"judges": [{"name": "j1", "model": {"backend": "scripted", "name": "judge", "script": {"choices": {"because": "A"}}},
                     "prompt": "{{ statement }} || {{ text }}"}]}


def _spec(workdir: Path) -> Path:
    """50 statements x 10 tones = 500 requests (few statements keep the metric's cluster
    bootstrap cheap)."""
    rows = ["statement,category"] + [f"People from town {i} are careful with money.,town" for i in range(50)]
    (workdir / "statements.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    tones = "".join(f'    t{j}: {{template: "Variant {j}."}}\n' for j in range(10))
    return write_spec(workdir / "faults.yaml", SPEC.replace("TONES", tones))


def _summary(workdir: Path, known: set[Path]) -> tuple[dict, Path]:  # type: ignore[type-arg]
    """The summary of the one run folder not in `known`."""
    new = [d for d in run_dirs(workdir) if d not in known]
    assert len(new) == 1
    return json.loads((new[0] / "summary.json").read_text()), new[0]


@pytest.mark.slow  # 500 requests over HTTP with injected faults and their backoffs
def test_500_requests_with_20_percent_faults_add_up_and_retry_only_when_asked(
        workdir: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FAULT_TEST_KEY", SECRET)
    spec = _spec(workdir)
    faults = mixed_faults(0.2, seed=11)
    with FaultServer(faults, hang_s=4.0) as server:
        args = [f"spec={spec}", *operator_conf(workdir, judge=PANEL), "model=openai_compat", f"model.base_url={server.url}",
                "model.api_key_env=FAULT_TEST_KEY", "model.timeout=2.0", f"model.max_retries={MAX_RETRIES}",
                "model.backoff_s=0.01", "model.concurrency=16", *isolation(workdir)]

        # what the server was scripted to do, prompt by prompt, known before any call
        plan = prepare(compose(args)).plan
        prompts = [prompt_of(r.messages) for r in plan.requests.values()]
        assert len(plan.requests) == N and len(set(prompts)) == N
        scripted = {p: faults(p) for p in prompts}
        injected = {p: f for p, f in scripted.items() if f is not None}
        permanent = {p: f for p, f in injected.items() if f.times is None}
        assert 0.15 * N < len(injected) < 0.25 * N                       # about 20% faulted
        assert {f.kind for f in injected.values()} == set(GENERATE_KINDS)  # every kind present
        assert 0 < len(permanent) < len(injected)                         # some recover, some never

        # about 10% failed for good, above the 5% bound: the run could not measure (exit 4)
        code, out, err = cli("run", *args)
        assert len(permanent) > 0.05 * N and code == EXIT_UNMEASURED, err
        s1, run1 = _summary(workdir, set())
        assert s1["measured"] is False and f"{len(permanent)}/{N} requests failed" in s1["unmeasured_reason"]
        ex = s1["execution"]
        assert ex["requests"] == N and ex["calls"] == N and ex["cache_hits"] == 0
        assert ex["answered"] + ex["failures"] == N
        assert ex["failures"] == len(permanent) == ex["new_failures"]
        assert ex["failures_by_kind"] == dict(Counter(CLIENT_KIND[f.kind] for f in permanent.values()))
        assert sum(ex["failures_by_kind"].values()) == ex["failures"]
        assert s1["metrics"]["biaxis"]["counts"]["responses"] == ex["answered"]

        # retries were bounded: each prompt was sent exactly as often as its script implies
        def expected_attempts(p: str) -> int:
            f = scripted[p]
            if f is None:
                return 1
            if f.kind in ("empty", "content_filter"):
                return 1                    # what the model said is not retried
            return 1 + MAX_RETRIES if f.times is None else f.times + 1
        assert dict(server.attempts) == {p: expected_attempts(p) for p in prompts}

        # the store holds the same outcome, with the kind, for every request
        db = sqlite3.connect(workdir / "cache.sqlite")
        rows = {json.loads(req)["messages"][0]["content"]: (status, kind) for req, status, kind in
                db.execute("SELECT request, status, error_kind FROM responses WHERE kind = 'generate'")}
        db.close()
        assert len(rows) == N
        assert {p for p, (status, _) in rows.items() if status == "failed"} == set(permanent)
        assert all(rows[p][1] == CLIENT_KIND[f.kind] for p, f in permanent.items())

        # the audit trail and the command's own summary line carry the kinds too
        trail = read_jsonl(run1 / "responses.jsonl")
        failed = [t for t in trail if t["status"] == "failed"]
        assert dict(Counter(t["error_kind"] for t in failed)) == ex["failures_by_kind"]
        assert all(t["error_kind"] is None for t in trail if t["status"] == "ok")
        assert all(t["attempts"] == expected_attempts(prompt_of(t["request"]["messages"])) for t in trail)
        line = next(x for x in out.splitlines() if " failed" in x)
        assert all(f"{kind} {n}" in line for kind, n in ex["failures_by_kind"].items()) and "--retry-failed" in line

        # the report shows the same counts
        md = (run1 / "report.md").read_text()
        html = (run1 / "report.html").read_text()
        assert f"- answered: {ex['answered']}\n" in md and f"- failures: {len(permanent)}\n" in md
        assert f"<td>answered</td><td>{ex['answered']}</td>" in html
        assert f"<td>failures</td><td>{len(permanent)}</td>" in html
        for kind, n in ex["failures_by_kind"].items():
            assert f"{kind} {n}" in md and f"{kind} {n}" in html

        # a rerun sends nothing: failures stay failures until asked
        args.append("report.formats=[md,json]")  # the plots were drawn once; skip them from here
        calls_before = server.calls
        code, _, err = cli("run", *args)
        assert code == EXIT_UNMEASURED, err
        s2, run2 = _summary(workdir, {run1})
        assert server.calls == calls_before
        assert s2["execution"]["calls"] == 0 and s2["execution"]["failures"] == len(permanent)

        # the server recovers; --retry-failed sends exactly the failed requests, once each
        server.healed = True
        before = dict(server.attempts)
        code, _, err = cli("run", "--retry-failed", *args)
        assert code == 0, err
        s3, _ = _summary(workdir, {run1, run2})
        assert s3["measured"] is True
        resent = {p: n - before.get(p, 0) for p, n in server.attempts.items() if n != before.get(p, 0)}
        assert resent == {p: 1 for p in permanent}
        ex3 = s3["execution"]
        assert ex3["calls"] == len(permanent) and ex3["cache_hits"] == N - len(permanent)
        assert ex3["failures"] == 0 and ex3["answered"] == N and ex3["failures_by_kind"] == {}

    # the key was sent, but is nowhere in the store or the run folders
    assert server.seen[0]["auth"] == f"Bearer {SECRET}"
    written = [p for p in workdir.rglob("*") if p.is_file()]
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]
