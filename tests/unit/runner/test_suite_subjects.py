"""Suite members that run on some subjects only (chat methods on chat models), and sanity
members: reported per subject as passed/failed, left out of the overall verdict and of
triangulation."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.errors import SpecError
from biasaudit.records.summary import RunSummary
from biasaudit.runner.suite import build_suite_summary, plan_jobs
from biasaudit.spec.suite import SuiteSpec, load_suite
from tests.helpers import write_spec


def _suite() -> SuiteSpec:
    return SuiteSpec.model_validate({
        "name": "s", "subjects": ["a", "b", "c", "d"],
        "members": [{"spec": "crows_pairs_tp", "label": "tp"},
                    {"spec": "winoqueer_nli", "label": "nli", "subjects": ["a", "b", "c"]},
                    {"spec": "pivotal_nonsense", "label": "sanity", "subjects": ["a", "d"], "sanity": True,
                     "overrides": ["+stimuli.sample.n=10", "metrics.0.x=1"]}]})


def test_members_run_on_their_subjects_only() -> None:
    jobs = plan_jobs(_suite(), Path("suite.yaml"), [], False)
    assert sorted((j.member_id, j.subject) for j in jobs) == sorted(
        [("tp", s) for s in "abcd"] + [("nli", s) for s in "abc"] + [("sanity", "a"), ("sanity", "d")])
    sanity = next(j for j in jobs if j.member_id == "sanity")
    assert sanity.overrides[1:] == ["+stimuli.sample.n=10", "metrics.0.x=1", "model=a"]
    # a model given on the command line replaces the subjects: every member runs on it;
    # a key given there replaces the member's own override of it
    jobs = plan_jobs(_suite(), Path("suite.yaml"), ["model=mine", "+stimuli.sample.n=1"], False)
    assert sorted(j.member_id for j in jobs) == ["nli", "sanity", "tp"]
    sanity = next(j for j in jobs if j.member_id == "sanity")
    assert sanity.overrides[1:] == ["metrics.0.x=1", "model=mine", "+stimuli.sample.n=1"]


def test_member_subjects_must_be_suite_subjects(tmp_path: Path) -> None:
    f = write_spec(tmp_path / "suite.yaml", "suite:\n  name: s\n  subjects: [a, b]\n  members:\n"
                                            "    - {spec: crows_pairs_tp, subjects: [a, z]}\n")
    with pytest.raises(SpecError) as err:
        load_suite([f"spec={f}"])
    assert err.value.key == "suite.members[0].subjects" and "z" in err.value.message


def _summary(model: str, value: float, overall: str) -> RunSummary:
    est = {"value": value, "ci_low": value - 1, "ci_high": value + 1, "n": 10, "method": "wilson"}
    return RunSummary.model_validate({
        "metrics": {"m": {"name": "m", "headline": "score", "estimates": {"score": est}, "reference": 50.0}},
        "audit": {"name": "x", "method": "x"}, "model": {"name": model}, "overall": overall, "verdicts": [],
        "execution": {"requests": 1, "calls": 1, "failures": 0}, "cover": {"notices": ["Licence X."]}})


def test_sanity_members_are_stated_and_kept_out_of_the_verdict_and_triangulation(tmp_path: Path) -> None:
    suite = _suite()
    jobs = plan_jobs(suite, Path("suite.yaml"), [], False)
    overall = {"tp": "PASS", "nli": "PASS", "sanity": "FAIL"}
    results = [(j, tmp_path / f"{j.member_id}-{j.subject}",
                _summary(f"model-{j.subject}", 50 + ord(j.subject) % 7, overall[j.member_id])) for j in jobs]
    s = build_suite_summary(suite, tmp_path / "suite.yaml", ["biasaudit"], results, tmp_path)
    assert s.overall == "PASS"  # the failed sanity checks do not make the bias verdict FAIL
    assert [(c.subject, c.verdict) for c in s.sanity] == [("a", "FAIL"), ("d", "FAIL")]
    assert all("sanity check failed for this model" in c.text for c in s.sanity)
    assert s.triangulation.labels == ["tp", "nli"]
    (pair,) = s.triangulation.pairs
    assert pair.n == 3  # tp and nli share subjects a, b, c
    assert s.verdict_matrix["nli"] == {"a": "PASS", "b": "PASS", "c": "PASS"}
    assert s.notices == ["Licence X."]
