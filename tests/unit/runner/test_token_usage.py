"""Each answer keeps the tokens its provider reported (OpenAI's `usage`), the run's
summary sums them, and the report's cover shows tokens and cost at `model.price`,
marked estimated where the provider reported no usage (issue 43, section 2). The server
here is a local fake that reports counts chosen by the test; every expected figure is
worked out by hand from those counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from biasaudit.backends.openai_parse import reported_usage as parse_usage
from biasaudit.records.responses import Response, reported_usage
from tests.conftest import isolation, run_dirs
from tests.helpers import operator_conf, write_spec
from tests.support.fault_server import FaultServer, Raw, http_response

SPEC = """
audit: {name: tokens, method: biaxis}
stimuli: {source: statements.csv, format: statements}
factors:
  task:
    bj: {template: "Statement: {{ statement }} Do you agree? Answer Yes or No, then explain."}
  tone:
    t0: {template: "Plain."}
    t1: {template: "Formal tone, please."}
probe: {kind: generate, max_tokens: 20}
metrics:
  - {name: biaxis, parser: false}
"""
PANEL = {"judges": [{"name": "j1", "model": {"backend": "scripted", "name": "judge", "script": {"choices": {"because": "A"}}},
                     "prompt": "{{ statement }} || {{ text }}"}]}
PRICE = ["+model.price.input_per_million=2.5", "+model.price.output_per_million=10"]


def _answer(usage: dict[str, int] | None) -> Raw:
    body: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": "Yes, because it is so."},
                                         "finish_reason": "stop"}]}
    if usage is not None:
        body["usage"] = usage
    return Raw(http_response(200, json.dumps(body).encode(), {"Content-Type": "application/json"}))


def _run(workdir: Path, cli: Any, silent: str | None, price: list[str] = PRICE) -> tuple[dict[str, Any], str, str, list[str]]:
    """Run 5 statements x 2 tones (10 requests) against a server that reports 1000 prompt
    and 200 completion tokens per answer, except for prompts containing `silent`."""
    rows = ["statement,category"] + [f"People from town {i} are careful with money.,town" for i in range(5)]
    (workdir / "statements.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = write_spec(workdir / "tokens.yaml", SPEC)
    seen: list[str] = []

    def respond(prompt: str, headers: dict[str, str]) -> Raw:
        seen.append(prompt)
        quiet = silent is not None and silent in prompt
        return _answer(None if quiet else {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200})

    with FaultServer(responder=respond) as server:
        code, _, err = cli("run", f"spec={spec}", *operator_conf(workdir, judge=PANEL), "model=openai_compat",
                           f"model.base_url={server.url}", "model.api_key_env=null", "model.name=hosted", *price,
                           *isolation(workdir))
    assert code in (0, 1, 3), err
    [run] = run_dirs(workdir)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return summary, (run / "report.md").read_text(encoding="utf-8"), (run / "report.html").read_text(encoding="utf-8"), seen


def test_reported_usage_is_summed_and_the_cover_shows_the_cost(workdir: Path, cli: Any) -> None:
    s, md, html, seen = _run(workdir, cli, None)
    assert len(set(seen)) == 10
    ex = s["execution"]
    # 10 answers x 1000 prompt tokens, x 200 completion tokens
    assert (ex["input_tokens"], ex["output_tokens"], ex["usage_reported"], ex["usage_missing"]) == (10_000, 2_000, 10, 0)
    assert ex["estimated_input_tokens"] == ex["estimated_output_tokens"] == 0
    [t] = s["cover"]["tokens"]
    # 10,000 x 2.50 / 1e6 = 0.025; 2,000 x 10 / 1e6 = 0.02; together 0.045
    assert t["cost"] == pytest.approx(0.045) and t["currency"] == "USD" and t["estimated_answers"] == 0
    line = ("hosted: 10,000 input and 2,000 output tokens as the provider reported them for all 10 answers; "
            "cost 0.045 USD at 2.5 in / 10 out per million tokens")
    assert t["text"] == line
    assert f"| Tokens and cost | {line} |" in md and f"<tr><td>Tokens and cost</td><td>{line}</td></tr>" in html


def test_answers_without_usage_are_estimated_and_said_so(workdir: Path, cli: Any) -> None:
    s, md, _, seen = _run(workdir, cli, "town 0 ")
    quiet = sorted({p for p in seen if "town 0 " in p})
    assert len(quiet) == 2  # one statement x two tones
    ex = s["execution"]
    assert (ex["input_tokens"], ex["output_tokens"], ex["usage_reported"], ex["usage_missing"]) == (8_000, 1_600, 8, 2)
    # the plan's estimate of the two silent answers: characters / 4 of each prompt in, max_tokens (20) out
    est_in = sum(len(p) // 4 for p in quiet)
    assert (ex["estimated_input_tokens"], ex["estimated_output_tokens"]) == (est_in, 40)
    [t] = s["cover"]["tokens"]
    tin, tout = 8_000 + est_in, 1_600 + 40
    assert (t["input_tokens"], t["output_tokens"], t["estimated_answers"]) == (tin, tout, 2)
    assert t["cost"] == pytest.approx(tin * 2.5 / 1e6 + tout * 10 / 1e6)
    assert "(estimated: the provider reported no usage for 2 of 10 answers" in t["text"]
    # the two prompts are 106 and 120 characters: 26 + 30 = 56 tokens;
    # 8,056 x 2.5 / 1e6 + 1,640 x 10 / 1e6 = 0.02014 + 0.0164 = 0.03654
    assert sorted(len(p) for p in quiet) == [106, 120] and est_in == 56 and "; estimated cost 0.0365 USD at 2.5 in / 10 out" in t["text"], t["text"]
    assert "| Tokens and cost | hosted: " in md and "estimated" in md


def test_no_price_says_so_on_the_cover(workdir: Path, cli: Any) -> None:
    s, md, _, _ = _run(workdir, cli, None, price=[])
    [t] = s["cover"]["tokens"]
    assert t["cost"] is None and t["text"].endswith("; no price given for hosted (model.price)")
    assert s["execution"]["input_tokens"] == 10_000


def test_usage_is_read_only_when_both_counts_are_given() -> None:
    assert parse_usage({"usage": {"prompt_tokens": 7, "completion_tokens": 3}}) == {"input_tokens": 7, "output_tokens": 3}
    assert parse_usage({"usage": {"total_tokens": 10}}) is None
    assert parse_usage({"usage": {"prompt_tokens": True, "completion_tokens": 3}}) is None
    assert parse_usage({}) is None
    ok = Response(key="k", status="ok", output={"text": "x", "usage": {"input_tokens": 7, "output_tokens": 3}})
    u = reported_usage(ok)
    assert u is not None and (u.input_tokens, u.output_tokens) == (7, 3)
    bad = Response(key="k", status="ok", output={"text": "x", "usage": {"input_tokens": -1, "output_tokens": 3}})
    assert reported_usage(bad) is None
    assert reported_usage(Response(key="k", status="failed", error="x")) is None
