"""The self-test's permutation row (runner/selftest_groups.py, issue 37 section 3): the
oracle's copy of the design with the group labels reassigned, a gap planted by the
prompt's text (never by the group variable), and a failure that names the level. The
broken shipped specs it must fail: test_broken_specs.py (class PERMUTE)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from biasaudit.methods.fisco.oracle import ORACLE, tag
from biasaudit.records.responses import generated_text
from biasaudit.runner import selftest_groups
from biasaudit.runner.selftest_groups import relabelled
from biasaudit.runner.selftest_oracles import SelfTestResult, oracle_responses

ORACLE_MODEL = ["model=scripted", "model.backend=oracle", "~model.script"]


@pytest.fixture(scope="module")
def prep() -> Any:
    from biasaudit.runner.pipeline import prepare
    from biasaudit.spec.compose import compose

    return prepare(compose(["spec=fisco_gender", *ORACLE_MODEL]))


def _levels(prep: Any) -> dict[tuple[str, str], str]:
    return {("person", lv): str(s.vars["group"]) for lv, s in prep.composed.config.factors["person"].items()}


def test_relabelled_moves_the_labels_the_metric_reads_and_keeps_the_prompts(prep: Any) -> None:
    from biasaudit.coding.units import units_of

    spec = _levels(prep)
    swapped = {k: {"female": "male", "male": "female"}[g] for k, g in spec.items()}
    copy = relabelled(prep, "group", swapped)
    before = {u.id: u.vars["group"] for u in units_of(prep)}
    after = {u.id: u.vars["group"] for u in units_of(copy)}
    assert before.keys() == after.keys() and len(before) == 18
    assert all(after[u] != before[u] for u in before)  # every unit's group label moved ...
    assert copy.plan.requests == prep.plan.requests  # ... and no prompt changed
    assert _levels(prep) == spec  # the spec's own design is untouched


def test_the_gap_oracle_reads_the_prompt_not_the_group_variable(prep: Any) -> None:
    params = prep.params["fisco"]
    planted = frozenset({"Maria"})
    got = oracle_responses(prep, ORACLE, params, "gap", planted)
    # the same answers whatever the design's group labels say (here: every level in one group)
    scrambled = relabelled(prep, "group", {k: "x" for k in _levels(prep)})
    assert got == oracle_responses(scrambled, ORACLE, params, "gap", planted)
    gap = f"profile {tag('gap')}"
    by_text = {k: "Maria" in (prep.plan.requests[k].messages or [{}])[-1].get("content", "") for k in got}
    assert sum(by_text.values()) == 3  # three questions, one prompt each naming Maria
    assert {k: gap in (generated_text(r) or "") for k, r in got.items()} == by_text


def test_the_name_must_be_a_whole_word_of_the_prompt(prep: Any) -> None:
    # "Mar" is inside "Maria" but names no level: no request gets the gap
    got = oracle_responses(prep, ORACLE, prep.params["fisco"], "gap", frozenset({"Mar"}))
    assert not any(f"profile {tag('gap')}" in (generated_text(r) or "") for r in got.values())


def test_a_metric_that_does_not_follow_the_labels_fails_the_permuted_run(prep: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipeline that reads the groups from something else than the design's labels (here
    simulated: the permuted copy mixes the names across the groups instead of swapping the
    labels) fails the permuted run, with no level to blame."""
    real = selftest_groups.relabelled
    calls: list[int] = []

    def mixed(p: Any, var: str, assignment: Any, field: bool = False) -> Any:
        calls.append(1)
        if len(calls) == 1:
            return real(p, var, assignment, field)
        order = sorted(assignment)
        # david, emily, john | maria, michael, sarah: each group holds names of both
        return real(p, var, {k: ("female", "male")[i >= 3] for i, k in enumerate(order)}, field)

    monkeypatch.setattr(selftest_groups, "relabelled", mixed)
    out = SelfTestResult(spec="fisco_gender")
    selftest_groups.group_rows(out, prep, ORACLE, prep.params["fisco"])
    rows = [r for r in out.rows if r.oracle == "permute"]
    assert [r.ok for r in rows] == [True] * 3 + [False] * 3
    [problem] = out.problems
    assert problem.startswith("permutation row (labels permuted female->male, male->female)")
    assert "the estimates do not follow the design's group labels" in problem


def test_the_shipped_spec_passes_the_row_and_notes_the_names_the_list_lacks(prep: Any) -> None:
    out = SelfTestResult(spec="fisco_gender")
    selftest_groups.group_rows(out, prep, ORACLE, prep.params["fisco"])
    assert out.problems == [] and len(out.rows) == 6 and all(r.ok for r in out.rows)
    assert {r.got for r in out.rows} == {"1"}
    [note] = out.notes
    assert re.search(r"does not give the group of emily \('Emily'\), sarah \('Sarah'\)", note)


@pytest.fixture(scope="module")
def hiring() -> Any:
    from biasaudit.runner.pipeline import prepare
    from biasaudit.spec.compose import compose

    return prepare(compose(["spec=hiring_impact", *ORACLE_MODEL]))


def _hiring_rows(hiring: Any) -> SelfTestResult:
    from biasaudit.methods.label_rates.impact_oracle import ORACLE as IMPACT

    out = SelfTestResult(spec="hiring_impact")
    selftest_groups.group_rows(out, hiring, IMPACT, hiring.params["impact"])
    return out


def test_the_gap_moves_with_the_labels_of_a_per_group_estimate(hiring: Any) -> None:
    """hiring_impact: 48 candidates, 24 per gender, each in two framings. The gap oracle
    answers "No" to every prompt that names a man ("A man Asian candidate ..."), so by
    hand: the man group's selection rate is 0/48 units, the woman group's 48/48, every
    race's 24/48 = 0.5. With the labels permuted (man->woman, woman->man) in the oracle's
    copy, the same prompts must give the woman group 0 and the man group 1; the races do
    not move."""
    out = _hiring_rows(hiring)
    assert out.problems == [] and all(r.ok for r in out.rows)
    got = {r.threshold: r.got for r in out.rows}
    assert got["impact.rate.gender.man (as the spec groups them)"] == "0"
    assert got["impact.rate.gender.woman (as the spec groups them)"] == "1"
    assert got["impact.rate.gender.man (labels permuted man->woman, woman->man)"] == "1"
    assert got["impact.rate.gender.woman (labels permuted man->woman, woman->man)"] == "0"
    races = [v for k, v in got.items() if k.startswith("impact.rate.race.")]
    assert races == ["0.5"] * 8


def test_an_estimate_that_stays_put_when_the_labels_move_fails(hiring: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipeline whose groups do not follow the design's labels (simulated: the permuted
    copy is the spec's own) leaves the gap on the man group: the permuted run fails."""
    real = selftest_groups.relabelled
    monkeypatch.setattr(selftest_groups, "relabelled", lambda p, var, a, field=False: p)
    out = _hiring_rows(hiring)
    monkeypatch.setattr(selftest_groups, "relabelled", real)
    bad = [r.threshold for r in out.rows if not r.ok]
    assert "impact.rate.gender.man (labels permuted man->woman, woman->man)" in bad
    assert not any("as the spec groups them" in b for b in bad)
    [problem] = out.problems
    assert problem.startswith("permutation row (labels permuted man->woman, woman->man)")
    assert "check that the metric groups by the stimulus field 'gender'" in problem


def test_no_row_where_the_prompts_do_not_name_the_category(hiring: Any) -> None:
    """Groups whose prompts do not name them (here: the gender word taken out of every
    prompt) cannot be planted by content: no permutation row, rather than a false one."""
    import dataclasses

    from biasaudit.methods.label_rates.impact_oracle import groups

    reqs = {k: r.model_copy(update={"messages": [{**m, "content": re.sub(r"\b(wo)?man\b", "person",
                                                                            m.get("content", ""))}
                                                   for m in (r.messages or [])]})
            for k, r in hiring.plan.requests.items()}
    blind = dataclasses.replace(hiring, plan=dataclasses.replace(hiring.plan, requests=reqs))
    assert groups(hiring, hiring.params["impact"]) is not None
    assert groups(blind, hiring.params["impact"]) is None
