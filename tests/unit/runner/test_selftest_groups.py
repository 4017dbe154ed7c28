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

    def mixed(p: Any, var: str, assignment: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            return real(p, var, assignment)
        order = sorted(assignment)
        # david, emily, john | maria, michael, sarah: each group holds names of both
        return real(p, var, {k: ("female", "male")[i >= 3] for i, k in enumerate(order)})

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
