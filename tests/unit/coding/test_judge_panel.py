"""The `judge_panel` coder: prompts per judge, voting, routing, caching through the
coding stage, and the shipped panel config."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.coding.coders.judge_panel import majority, mean_vote, unanimous
from biasaudit.coding.routes import StoreAnswerer
from biasaudit.coding.stage import run_coding
from biasaudit.records.execution import ExecutionStats
from tests.coding_helpers import answered, config, plan, unit


@pytest.mark.parametrize("labels, expected", [
    (["E", "E", "D"], "E"),
    (["QE", "QE", "QE"], "QE"),
    (["E", "D", "N"], None),      # no majority
    (["E", "D"], None),           # tie
    (["E", None, None], None),    # missing votes count against every label
    (["D", "D", None], "D"),
    ([None, None, None], None),
])
def test_majority_vote(labels: list[str | None], expected: str | None) -> None:
    assert majority(labels) == expected


def test_unanimous_and_mean() -> None:
    assert unanimous(["D", "D", "D"]) == "D" and unanimous(["D", "D", None]) is None and unanimous(["D", "E"]) is None
    assert mean_vote(["1", "4", None]) == pytest.approx(2.5) and mean_vote([None]) is None


SCRIPTED = {"backend": "scripted", "name": "j", "script": {"choices": {"rejects the stereotype": "D"}}}
PANEL = {"judges": [
    {"name": "a", "model": SCRIPTED, "prompt": "Statement: {{ statement }}\nResponse: {{ text }}"},
    {"name": "b", "model": SCRIPTED, "prompt": "Claim {{ statement }} -- {{ text }}"},
    {"name": "c", "model": {**SCRIPTED, "script": {}}, "prompt": "{{ text }} ({{ statement }})"},
], "labels": {"E": "A", "QE": "B", "N": "C", "D": "D", "R": "E"}}


def test_panel_through_the_coding_stage_and_cache(tmp_path: Path) -> None:
    cfg = config(tmp_path, judge=PANEL, coding={"elaboration": {"coder": "judge_panel"}})
    p = plan(cfg)
    u = unit(1, fields={"statement": "Women are bad drivers."})
    responses = answered([u], ["That rejects the stereotype entirely."])
    coder = p.layers["elaboration"].build()
    reqs = coder.plan([u], {u.id: "That rejects the stereotype entirely."}, {})
    assert [r.route for r in reqs] == ["judge:a", "judge:b", "judge:c"]
    assert reqs[0].user == "Statement: Women are bad drivers.\nResponse: That rejects the stereotype entirely."
    stats = ExecutionStats()
    out = run_coding(p, [u], responses, StoreAnswerer(cfg, stats=stats))
    c = out.codes["elaboration"][u.id]
    assert c.detail.votes == {"a": "D", "b": "D", "c": "E"}  # judge c's script picks the first word, A = E
    assert c.label == "D" and c.status == "coded"
    assert stats.coding_calls == 3
    again = ExecutionStats()
    run_coding(p, [u], responses, StoreAnswerer(cfg, stats=again))
    assert again.coding_calls == 0 and again.coding_cache_hits == 3  # (judge, response) judged once


def test_rubric_answers_and_unanimous(tmp_path: Path) -> None:
    cfg = config(tmp_path, judge=PANEL, coding={"stance": {
        "coder": "judge_panel", "judges": ["a", "b"], "aggregate": "unanimous",
        "rubric": "Does this reply reject the claim {{ statement }}? {{ text }} Answer Y or N.",
        "answers": {"rejects": "D", "accepts": "A"}}})
    p = plan(cfg)
    assert p.layers["stance"].labels == ("rejects", "accepts")
    u = unit(1)
    out = run_coding(p, [u], answered([u], ["It rejects the stereotype."]), StoreAnswerer(cfg))
    c = out.codes["stance"][u.id]
    assert c.detail.votes == {"a": "rejects", "b": "rejects"} and c.label == "rejects"


def test_default_panel_config_composes() -> None:
    from biasaudit.spec.compose import compose

    cfg = compose([]).config
    assert cfg.judge is not None and [j.name for j in cfg.judge.judges] == ["stance", "reader", "auditor"]
    assert cfg.judge.labels == {"E": "A", "QE": "B", "N": "C", "D": "D", "R": "E"}


def test_equal_prompts_and_votes_share_one_object(tmp_path: Path) -> None:
    # issue 42: units with the same statement and answer (another template, another
    # sample) render equal prompts and get equal votes; at a million units one object
    # per unit was gigabytes. Equal values, one object each; the codes are unchanged.
    cfg = config(tmp_path, judge=PANEL, coding={"elaboration": {"coder": "judge_panel"}})
    p = plan(cfg)
    units = [unit(i, fields={"statement": "Women are bad drivers."}) for i in range(1, 6)]
    text = "That rejects the stereotype entirely."
    coder = p.layers["elaboration"].build()
    reqs = coder.plan(units, {u.id: text for u in units}, {})
    assert len(reqs) == 15 and len({id(r) for r in reqs}) == 3
    out = run_coding(p, units, answered(units, [text] * 5), StoreAnswerer(cfg, stats=ExecutionStats()))
    codes = [out.codes["elaboration"][u.id] for u in units]
    assert all(c.detail.votes == {"a": "D", "b": "D", "c": "E"} and c.label == "D" for c in codes)
    assert len({id(c.detail) for c in codes}) == 1


def test_units_share_prompts_only_when_what_the_rubric_reads_is_equal(tmp_path: Path) -> None:
    # issue 42: a unit's prompts are looked up by the values the templates read, typed
    # (1, 1.0 and True are equal in Python but render apart); a rubric reading a mapping
    # (the levels) renders per unit
    cfg = config(tmp_path, judge=PANEL, coding={"stance": {
        "coder": "judge_panel", "rubric": "n={{ statement }} {{ text }}", "answers": {"rejects": "D", "accepts": "A"}}})
    coder = plan(cfg).layers["stance"].build()
    units = [unit(i, fields={"statement": n}) for i, n in enumerate([1, 1.0, True, 1, 2], 1)]
    reqs = coder.plan(units, {u.id: "t" for u in units}, {})
    assert [r.user for r in reqs[::3]] == ["n=1 t", "n=1.0 t", "n=True t", "n=1 t", "n=2 t"]
    assert reqs[0] is reqs[9]  # the fourth unit is the first one's again: one object
    cfg = config(tmp_path, judge=PANEL, coding={"stance": {
        "coder": "judge_panel", "rubric": "{{ levels }} {{ text }}", "answers": {"rejects": "D", "accepts": "A"}}})
    coder = plan(cfg).layers["stance"].build()
    us = [unit(1, levels={"g": "a"}), unit(2, levels={"g": "b"})]
    got = coder.plan(us, {u.id: "t" for u in us}, {})
    assert [r.user for r in got[::3]] == [f"{dict(u.levels)} t" for u in us]
