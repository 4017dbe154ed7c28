"""Issue 42, section 3: `biasaudit plan` estimates a run's disk against a real run of a
shipped spec on model=scripted, and its money as price x tokens worked by hand.

Tolerance, a factor of 2 either way for the run folder and the cache growth: the byte
constants (plan/footprint.py) were fitted on other specs (the paper-scale grid of
bench/scale_spec.py, hiring_impact, crows_pairs_tp); the specs here (bbq, bbq_generate)
were not used, so this is a check out of sample. A factor of 2 is what a refusal needs
(it is made on the estimate against free space measured in GB) and what the per-item
rows allow: they are an upper bound (a metric may write none)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import isolation, run_dirs

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def empty_cache_bytes(tmp: Path) -> int:
    from biasaudit.store import Store

    Store(tmp / "empty.sqlite").close()
    return (tmp / "empty.sqlite").stat().st_size


def plan_json(cli: Any, *args: str) -> dict[str, Any]:
    code, out, err = cli("plan", "--json", *args)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize("spec", ["bbq", "bbq_generate"])
def test_disk_estimate_within_2x_of_a_real_run(workdir: Path, cli: Any, spec: str) -> None:
    args = [f"spec={spec}", "model=scripted", "stimuli.sample.n=600", *isolation(workdir)]
    before = plan_json(cli, *args)
    assert before["plan_items"] == 1800  # 600 examples x 3 answer options / prompt conditions
    code, _, err = cli("run", "--fail-on", "never", *args)
    assert code in (0, 1), err
    (run,) = run_dirs(workdir)
    folder = folder_bytes(run)
    cache = (workdir / "cache.sqlite").stat().st_size - empty_cache_bytes(workdir)
    after = plan_json(cli, *args)  # a generation's answers now as long as measured
    est = after["disk_bytes"]
    assert 0.5 <= est["run_folder"] / folder <= 2, (est, folder)
    if spec == "bbq":  # scores: nothing to measure first, the estimate before the run is the one
        assert before["disk_bytes"]["basis"] == "a score stored per prompt token"
        assert 0.5 <= before["disk_bytes"]["run_folder"] / folder <= 2, (before, folder)
        assert 0.5 <= before["disk_bytes"]["cache_growth"] / cache <= 2, (before, cache)
    else:  # before the run every answer is taken at max_tokens: an upper bound that holds
        assert before["disk_bytes"]["basis"] == "answers at max_tokens: an upper bound"
        assert after["disk_bytes"]["basis"] == "answers as long as measured"
        assert before["disk_bytes"]["run_folder"] >= folder
        assert before["disk_bytes"]["cache_growth"] >= cache
    assert after["disk_bytes"]["cache_growth"] == 0 and after["calls_needed"] == 0


def test_money_is_price_times_tokens_by_hand(workdir: Path, cli: Any) -> None:
    spec = yaml.safe_load((ROOT / "specs" / "refusal_stance.yaml").read_text(encoding="utf-8"))
    max_tokens = spec["probe"]["max_tokens"]
    got = plan_json(cli, "spec=refusal_stance", "model=openai_compat", "+model.price.input_per_million=0.15",
                    "+model.price.output_per_million=0.60", *isolation(workdir))
    calls = got["calls_needed"]
    assert calls == got["subject_requests"] == 16  # 4 cells x 4 stimuli, nothing cached
    # input tokens by hand: characters / 4 of each prompt as the plan renders it
    from biasaudit.plan import compile_plan
    from biasaudit.runner.pipeline import plan_inputs
    from biasaudit.spec.compose import compose

    c = compose(["spec=refusal_stance", "model=openai_compat", *isolation(workdir)])
    inp = plan_inputs(c)
    plan = compile_plan(c.config, inp.stimuli, inp.identity, str(c.spec_file))
    tin = sum(max(1, sum(len(m["content"]) for m in r.messages or []) // 4) for r in plan.requests.values())
    assert got["input_tokens"] == tin
    want = tin * 0.15 / 1e6 + calls * max_tokens * 0.60 / 1e6
    assert got["cost"]["amount"] == pytest.approx(want, rel=1e-12)
    assert got["cost"]["currency"] == "USD"
