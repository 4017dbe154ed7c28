"""Judge panel for the elaboration layer: prompts, routing per judge, voting, caching."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.coding.judges import ABSTAIN, judge_label, judge_requests, majority
from biasaudit.engine import ExecutionStats
from biasaudit.pipeline import answer_derived
from biasaudit.spec import validate_config


@pytest.mark.parametrize("labels, expected", [
    (["E", "E", "D"], "E"),
    (["QE", "QE", "QE"], "QE"),
    (["E", "D", "N"], ABSTAIN),      # no majority
    (["E", "D"], ABSTAIN),           # tie
    (["E", None, None], ABSTAIN),    # missing votes count against every label
    (["D", "D", None], "D"),
    ([None, None, None], ABSTAIN),
])
def test_majority_vote(labels: list[str | None], expected: str) -> None:
    assert majority(labels) == expected


def panel_config(tmp_path: Path) -> object:
    scripted = {"backend": "scripted", "name": "j", "script": {"choices": {"rejects the stereotype": "D"}}}
    return validate_config({
        "audit": {"name": "t", "method": "biaxis"},
        "stimuli": {"inline": [{"statement": "s"}]},
        "probe": {"kind": "generate"},
        "metrics": [],
        "model": {"backend": "scripted", "name": "m"},
        "runtime": {"cache": str(tmp_path / "c.sqlite"), "progress": False},
        "judge": {"judges": [
            {"name": "a", "model": scripted, "prompt": "Statement: {{ statement }}\nResponse: {{ text }}"},
            {"name": "b", "model": scripted, "prompt": "Claim {{ statement }} -- {{ text }}"},
            {"name": "c", "model": {**scripted, "script": {}}, "prompt": "{{ text }} ({{ statement }})"},
        ]},
    }, spec_file=None)


def test_panel_through_the_derived_stage_and_cache(tmp_path: Path) -> None:
    cfg = panel_config(tmp_path)
    panel = cfg.judge  # type: ignore[attr-defined]
    reqs = judge_requests(panel, "Women are bad drivers.", "That rejects the stereotype entirely.")
    assert [d.route for d in reqs] == ["a", "b", "c"]
    assert reqs[0].text == "Statement: Women are bad drivers.\nResponse: That rejects the stereotype entirely."
    stats = ExecutionStats()
    got = answer_derived(cfg, reqs, stats, offline=False)  # type: ignore[arg-type]
    labels = [judge_label(panel, got[d].output["choice"]) for d in reqs]
    assert labels == ["D", "D", "E"]  # judge c's script picks the first word, A = E
    assert majority(labels) == "D"
    assert stats.derived_calls == 3
    again = ExecutionStats()
    answer_derived(cfg, reqs, again, offline=False)  # type: ignore[arg-type]
    assert again.derived_calls == 0 and again.derived_cache_hits == 3  # (judge, response) judged once


def test_default_panel_config_composes() -> None:
    from biasaudit.compose import compose

    cfg = compose([]).config
    assert cfg.judge is not None and [j.name for j in cfg.judge.judges] == ["stance", "reader", "auditor"]
    assert cfg.judge.labels == {"E": "A", "QE": "B", "N": "C", "D": "D", "R": "E"}
