"""`runtime.budget` (issue 43, section 2): the run stops before it would pass its budget,
by at most the answers of one window in flight (the engine sends a budgeted run in
windows of the model's concurrency, or a local model's batch, each reserved at the plan's
worst case before it goes); the stopped run is marked `stopped: budget` with its spend,
its verdicts are INCONCLUSIVE, and a resume with a higher budget completes it with no
call repeated. The scripted model reports a usage chosen here (40 input tokens a call,
more than the plan's characters / 4 estimate, so reservations run short and the window
matters); every expected figure is worked out by hand from those counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import operator_conf, tp_spec

USAGE_IN = 40          # input tokens each scripted answer reports
PRICE_IN = 1000.0      # per million input tokens: 40 tokens cost 0.04
CALL_COST = USAGE_IN * PRICE_IN / 1e6
WINDOW = 4             # runtime.batch_size: the scripted (local) model's window


def _model(workdir: Path, price: bool = True) -> dict[str, Any]:
    m: dict[str, Any] = {"backend": "scripted", "name": "billed",
                         "script": {"usage": {"input_tokens": USAGE_IN, "output_tokens": 0},
                                    "calls_log": str(workdir / "calls.log")}}
    if price:
        m["price"] = {"input_per_million": PRICE_IN, "output_per_million": 0.0}
    return m


def _run(workdir: Path, cli: Any, *budget: str, price: bool = True) -> tuple[int, str, str]:
    spec = tp_spec(workdir, n=10)
    return cli("run", f"spec={spec}", *operator_conf(workdir, model=_model(workdir, price)),  # type: ignore[no-any-return]
               f"runtime.batch_size={WINDOW}", *budget, *isolation(workdir))


def _calls(workdir: Path) -> list[str]:
    path = workdir / "calls.log"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def _latest(workdir: Path) -> tuple[Path, dict[str, Any]]:
    run = max(run_dirs(workdir), key=lambda p: p.stat().st_mtime)
    return run, json.loads((run / "summary.json").read_text(encoding="utf-8"))


def test_money_budget_stops_within_one_window_and_a_raised_budget_completes(workdir: Path, cli: Any) -> None:
    code, out, err = _run(workdir, cli, "runtime.budget.money=0.5")
    assert code == 4, err  # an incomplete run: "could not measure", as a run whose requests failed
    calls = _calls(workdir)
    run, s = _latest(workdir)
    b = s["budget"]
    assert b["stopped"] and b["limit"] == "runtime.budget.money"
    # every call reported 40 input tokens: the spend is the calls made x 40 tokens x 1000 / 1e6
    assert b["spent_input_tokens"] == USAGE_IN * len(calls)
    assert b["spent_money"] == pytest.approx(CALL_COST * len(calls))
    # never above the budget + one window of answers in flight (4 x 0.04 = 0.16)
    assert b["spent_money"] <= 0.5 + WINDOW * CALL_COST + 1e-12
    assert b["spent_money"] > 0.5 - CALL_COST  # and it did not stop long before it
    assert b["calls_not_made"] > 0 and len(calls) + b["calls_not_made"] == 20
    # the stimuli run are the ones answered in full (both sentences of a pair)
    assert b["planned"] == 10 and b["run"] + len(b["not_run_ids"]) == 10 and b["run"] >= 1
    assert s["execution"]["requests"] == 2 * b["run"]
    assert {v["verdict"] for v in s["verdicts"]} == {"INCONCLUSIVE"} and s["overall"] == "INCONCLUSIVE"
    assert all("stopped at its budget" in v["reason"] for v in s["verdicts"])
    assert not s["measured"] and s["unmeasured_reason"].startswith("stopped: budget (runtime.budget.money)")
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["stopped"] == "budget" and manifest["budget"]["spent_money"] == pytest.approx(b["spent_money"])
    cover = s["cover"]["budget"]
    assert cover.startswith(f"stopped: budget (runtime.budget.money): {USAGE_IN * len(calls):,} input and 0 output tokens")
    assert "Budget | stopped: budget" in (run / "report.md").read_text(encoding="utf-8")
    assert "stopped: budget" in (run / "report.html").read_text(encoding="utf-8")

    # resumed with a higher budget: the rest of the calls, none repeated
    code, _, err = _run(workdir, cli, "runtime.budget.money=10")
    assert code in (0, 1, 3), err
    after = _calls(workdir)
    assert len(after) == len(set(after)) == 20
    _, s2 = _latest(workdir)
    b2 = s2["budget"]
    assert not b2["stopped"] and b2["run"] == 10 and s2["measured"]
    # the spend is cumulative over the cache: all 20 answers, 20 x 0.04 = 0.8
    assert b2["spent_money"] == pytest.approx(0.8) and b2["spent_input_tokens"] == 800
    assert "INCONCLUSIVE" not in {v["verdict"] for v in s2["verdicts"]} or all(
        "budget" not in v["reason"] for v in s2["verdicts"])


def test_a_window_of_one_keeps_the_overshoot_to_one_answer(workdir: Path, cli: Any) -> None:
    spec = tp_spec(workdir, n=10)
    code, _, err = cli("run", f"spec={spec}", *operator_conf(workdir, model=_model(workdir)), "runtime.batch_size=1",
                       "runtime.budget.money=0.3", *isolation(workdir))
    assert code == 4, err
    _, s = _latest(workdir)
    assert s["budget"]["spent_money"] <= 0.3 + CALL_COST + 1e-12
    assert s["budget"]["spent_money"] == pytest.approx(CALL_COST * len(_calls(workdir)))


def test_token_only_budgets_need_no_price(workdir: Path, cli: Any) -> None:
    code, _, err = _run(workdir, cli, "runtime.budget.tokens=200", price=False)
    assert code == 4, err
    _, s = _latest(workdir)
    b = s["budget"]
    n = len(_calls(workdir))
    assert b["limit"] == "runtime.budget.tokens" and b["spent_money"] is None and b["currency"] is None
    assert b["spent_input_tokens"] == USAGE_IN * n and USAGE_IN * n <= 200 + WINDOW * USAGE_IN
    assert "stopped: budget (runtime.budget.tokens)" in s["cover"]["budget"]


def test_separate_input_cap(workdir: Path, cli: Any) -> None:
    code, _, err = _run(workdir, cli, "runtime.budget.input_tokens=120", price=False)
    assert code == 4, err
    _, s = _latest(workdir)
    assert s["budget"]["limit"] == "runtime.budget.input_tokens"
    assert s["budget"]["spent_input_tokens"] <= 120 + WINDOW * USAGE_IN


def test_a_budget_the_whole_run_fits_in_changes_nothing(workdir: Path, cli: Any) -> None:
    code, _, err = _run(workdir, cli, "runtime.budget.money=5")
    assert code in (0, 1, 3), err
    _, s = _latest(workdir)
    assert not s["budget"]["stopped"] and s["budget"]["spent_money"] == pytest.approx(0.8)
    assert s["cover"]["budget"] == "800 input and 0 output tokens, 0.8 USD spent of a budget of 5.00 USD money"
    assert all("budget" not in v["reason"] for v in s["verdicts"])


def test_money_budget_without_a_price_is_refused(workdir: Path, cli: Any) -> None:
    code, out, err = _run(workdir, cli, "runtime.budget.money=1", price=False)
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "runtime.budget.money: a money budget needs the price of billed (model.price)" in lines[0], err
    assert "conf/model/test.yaml" in lines[0]  # the file the price goes in
    assert _calls(workdir) == []


@pytest.mark.parametrize("override", ["runtime.budget.money=0", "runtime.budget.money=-1", "runtime.budget.tokens=0",
                                      "runtime.budget.tokens=-5", "runtime.budget.output_tokens=0"])
def test_zero_or_negative_budgets_are_refused(workdir: Path, cli: Any, override: str) -> None:
    code, _, err = _run(workdir, cli, override)
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and f"{override.split('=')[0]}: Input should be greater than 0" in lines[0], err
    assert _calls(workdir) == []


GEN_SPEC = """
audit: {name: budget-http, method: biaxis}
stimuli: {source: statements.csv, format: statements}
factors:
  task:
    bj: {template: "Statement: {{ statement }} Do you agree? Answer Yes or No, then explain."}
probe: {kind: generate, max_tokens: 20}
metrics:
  - {name: biaxis, parser: false}
"""
PANEL = {"judges": [{"name": "j1", "model": {"backend": "scripted", "name": "judge", "script": {"choices": {"because": "A"}}},
                     "prompt": "{{ statement }} || {{ text }}"}]}


def test_openai_compat_settles_the_usage_reported_on_the_wire(workdir: Path, cli: Any) -> None:
    """Through the real HTTP backend against a fake server that reports 1000 prompt and 200
    completion tokens per answer (far above the plan's estimate of ~20 in + 20 out): the
    spend is the reported usage, and with concurrency 2 it passes the 5,000-token budget
    by at most two answers."""
    from tests.helpers import write_spec
    from tests.support.fault_server import FaultServer, Raw, http_response

    rows = ["statement,category"] + [f"People from town {i} are careful with money.,town" for i in range(8)]
    (workdir / "statements.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = write_spec(workdir / "gen.yaml", GEN_SPEC)
    seen: list[str] = []

    def respond(prompt: str, headers: dict[str, str]) -> Raw:
        seen.append(prompt)
        body = {"choices": [{"message": {"role": "assistant", "content": "Yes, because it is so."},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}}
        return Raw(http_response(200, json.dumps(body).encode(), {"Content-Type": "application/json"}))

    with FaultServer(responder=respond) as server:
        code, _, err = cli("run", f"spec={spec}", *operator_conf(workdir, judge=PANEL), "model=openai_compat",
                           f"model.base_url={server.url}", "model.api_key_env=null", "model.name=hosted",
                           "model.concurrency=2", "+model.price.input_per_million=2.5",
                           "+model.price.output_per_million=10", "runtime.budget.tokens=5000", *isolation(workdir))
    assert code == 4, err
    _, s = _latest(workdir)
    b = s["budget"]
    calls = len(set(seen))
    assert b["stopped"] and b["limit"] == "runtime.budget.tokens"
    assert (b["spent_input_tokens"], b["spent_output_tokens"]) == (1000 * calls, 200 * calls)
    # 1,200 tokens an answer: at most 5,000 + 2 x 1,200 = 7,400 tokens
    assert 1200 * calls <= 5000 + 2 * 1200 and calls < 8
    # cost at the price: per answer 1000 x 2.5 / 1e6 + 200 x 10 / 1e6 = 0.0045
    assert b["spent_money"] == pytest.approx(0.0045 * calls)
    assert s["execution"]["input_tokens"] == 1000 * s["execution"]["usage_reported"]


def test_a_stopped_run_rerenders_from_the_store_with_the_same_stop(workdir: Path, cli: Any) -> None:
    from tests.helpers import comparable_summary

    assert _run(workdir, cli, "runtime.budget.money=0.5")[0] == 4
    run, _ = _latest(workdir)
    saved = workdir / "before.json"
    saved.write_text((run / "summary.json").read_text(encoding="utf-8"), encoding="utf-8")
    (run / "report.md").unlink()
    n = len(_calls(workdir))
    code, _, err = cli("report", str(run))  # no model: the stimuli answered in full, from the store
    assert code in (0, 4), err
    assert len(_calls(workdir)) == n
    assert comparable_summary(run / "summary.json") == comparable_summary(saved)
    assert "stopped: budget" in (run / "report.md").read_text(encoding="utf-8")


def test_the_documented_budget_recipe_runs_as_written(workdir: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/models-and-servers.md, "Budgets": both commands as written, the hosted base URL
    replaced by a local fake that reports 30 prompt and 40 completion tokens an answer;
    the output the page shows is what the first command prints."""
    import re
    import shlex

    from tests.helpers import REPO
    from tests.support.fault_server import FaultServer, Raw, http_response

    text = (REPO / "docs" / "models-and-servers.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- recipe: budget -->\n```\n(.*?)\n```\n\n.*?\n```\n(.*?)\n```", text, re.S)
    assert m, "docs/models-and-servers.md has no budget recipe followed by its output"
    stop, resume = (shlex.split(line) for line in m.group(1).splitlines())
    shown = m.group(2).splitlines()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-budget-recipe-0123456789")
    seen: list[str] = []

    def respond(prompt: str, headers: dict[str, str]) -> Raw:
        seen.append(prompt)
        body = {"choices": [{"message": {"role": "assistant", "content": "No."}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 30, "completion_tokens": 40, "total_tokens": 70}}
        return Raw(http_response(200, json.dumps(body).encode(), {"Content-Type": "application/json"}))

    with FaultServer(responder=respond) as server:
        def local(cmd: list[str]) -> list[str]:
            assert cmd[:2] == ["biasaudit", "run"]
            return [a.replace("https://api.openai.com/v1", server.url) for a in cmd[2:]]

        code, out, err = cli("run", *local(stop), *isolation(workdir))
        assert code == 4, err
        for line in shown:
            assert line in out.splitlines(), (line, out)
        # 30 x 0.15 / 1e6 + 40 x 0.60 / 1e6 = 0.0000285 an answer
        _, s = _latest(workdir)
        first = s["execution"]["calls"]
        assert first + s["budget"]["calls_not_made"] == 16 and first < 16
        assert s["budget"]["spent_money"] == pytest.approx(0.0000285 * first)
        assert s["budget"]["spent_money"] <= 0.0002 + 4 * 0.0000285  # one window of 4 (model.concurrency)
        code, out, err = cli("run", *local(resume), *isolation(workdir))
        assert code in (0, 1, 3), err
    _, s = _latest(workdir)
    # the rest of the subject's calls, none repeated (the subject also answers the coding calls here)
    assert s["execution"]["calls"] == 16 - first and s["execution"]["cache_hits"] == first
    assert len(seen) == len(set(seen)) and s["budget"]["spent_money"] == pytest.approx(16 * 0.0000285)


def test_a_budget_too_small_for_one_stimulus_stops_in_one_line(workdir: Path, cli: Any) -> None:
    code, _, err = _run(workdir, cli, "runtime.budget.tokens=5", price=False)
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "no stimulus was answered in full" in lines[0], err
    # every sentence is estimated at more than 5 tokens (characters / 4): no call can be reserved
    assert len(_calls(workdir)) == 0
    [run] = [p for p in (workdir / "reports").rglob("manifest.json")]
    manifest = json.loads(run.read_text(encoding="utf-8"))
    assert manifest["stopped"] == "budget" and manifest["budget"]["spent_input_tokens"] == 0
    assert manifest["budget"]["calls_not_made"] == 20
    assert (run.parent / "INTERRUPTED.txt").is_file() and not (run.parent / "summary.json").exists()


def test_a_budget_with_sequential_stopping_is_refused(workdir: Path, cli: Any) -> None:
    code, _, err = _run(workdir, cli, "runtime.budget.tokens=500", "runtime.sequential.look_every=5", price=False)
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "runtime.budget: a budget cannot be combined with sequential stopping" in lines[0], err
    assert _calls(workdir) == []


def _judged(workdir: Path, cli: Any, judge: dict[str, Any], *budget: str, cmd: str = "validate") -> tuple[int, str, str]:
    """`biasaudit validate` (or `run`) of a spec whose default coding asks the judge panel (biaxis)."""
    from tests.helpers import write_spec

    rows = ["statement,category"] + [f"People from town {i} are careful with money.,town" for i in range(4)]
    (workdir / "statements.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = write_spec(workdir / "gen.yaml", GEN_SPEC)
    return cli(cmd, f"spec={spec}", *operator_conf(workdir, model=_model(workdir), judge=judge),  # type: ignore[no-any-return]
               *budget, *isolation(workdir))


PRICED_PANEL = {"judges": [{**PANEL["judges"][0],
                            "model": {**PANEL["judges"][0]["model"],
                                      "price": {"input_per_million": 2.5, "output_per_million": 10}}}]}
SUBJECT_PANEL = {"judges": [{"name": "j1", "prompt": "{{ statement }} || {{ text }}"}]}  # the model under test judges


def test_a_money_budget_beside_a_judge_with_a_price_is_refused(workdir: Path, cli: Any) -> None:
    """Judges' calls are not counted by the budget: a judge with a price of its own would
    spend past a money budget unseen, so the pair is refused in one line, exit 2."""
    code, _, err = _judged(workdir, cli, PRICED_PANEL, "runtime.budget.money=1")
    assert code == 2, err
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and ("runtime.budget.money: judges' calls are not counted by a budget yet, and judge j1 "
                                "(judge) has a price") in lines[0], err
    code, _, err = _judged(workdir, cli, PRICED_PANEL, "runtime.budget.money=1", cmd="run")
    assert code == 2 and "judge j1 (judge) has a price" in err and _calls(workdir) == [], err
    # the same judge without a price, or a token budget (which counts the probe's calls
    # only, said in the docs), is accepted
    assert _judged(workdir, cli, PANEL, "runtime.budget.money=1")[0] == 0
    assert _judged(workdir, cli, PRICED_PANEL, "runtime.budget.tokens=1000")[0] == 0
    assert _judged(workdir, cli, PRICED_PANEL)[0] == 0


def test_judges_answered_by_the_model_under_test_are_said_to_be_uncounted(workdir: Path, cli: Any,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    import logging

    with caplog.at_level(logging.WARNING):
        code, _, err = _judged(workdir, cli, SUBJECT_PANEL, "runtime.budget.money=1")
    assert code == 0, err
    assert "the coding calls the model under test answers (judge j1) are not counted by runtime.budget" in \
        caplog.text + err
