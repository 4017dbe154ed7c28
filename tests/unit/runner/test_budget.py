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
    assert len(lines) == 1 and "runtime.budget.money" in lines[0] and "model.price" in lines[0], err
    assert _calls(workdir) == []


@pytest.mark.parametrize("override", ["runtime.budget.money=0", "runtime.budget.money=-1", "runtime.budget.tokens=0",
                                      "runtime.budget.tokens=-5", "runtime.budget.output_tokens=0"])
def test_zero_or_negative_budgets_are_refused(workdir: Path, cli: Any, override: str) -> None:
    code, _, err = _run(workdir, cli, override)
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and override.split("=")[0] in lines[0], err
    assert _calls(workdir) == []
