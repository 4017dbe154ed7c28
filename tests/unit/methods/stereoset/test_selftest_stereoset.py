"""`biasaudit selftest` of StereoSet (methods/stereoset/oracle.py): the shipped specs (the
causal and the masked LM one) detect a planted bias, the true values by hand from the
sample, a model whose every comparison ties is undefined (not SS = LMS = 0), and a spec
whose thresholds cannot reach the planted value fails its self-test."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.methods.oracle_kit import stratified_sides
from biasaudit.methods.stereoset.metric import LMS_TIED, SS_TIED, StereoSetParams, scores_of
from biasaudit.methods.stereoset.oracle import strata
from biasaudit.methods.stereoset.scores import Item
from biasaudit.runner.pipeline import prepare
from biasaudit.runner.selftest import _oracle_for, run_oracle
from biasaudit.spec.compose import compose
from tests.conftest import isolation
from tests.unit.methods.bbq.test_selftest_bbq import rows


def masked(workdir: Path) -> list[str]:
    """stereoset_mlm needs a masked LM backend to compose; the self-test calls no model, so
    any local folder stands in for its weights."""
    (workdir / "no-weights").mkdir(exist_ok=True)
    return ["model=hf_masked", f"model.path={workdir / 'no-weights'}"]


@pytest.mark.parametrize("spec", ["stereoset", "stereoset_mlm"])
def test_shipped_specs_selftest_passes(cli, workdir: Path, spec: str) -> None:  # type: ignore[no-untyped-def]
    extra = masked(workdir) if spec == "stereoset_mlm" else []
    code, out, err = cli("selftest", f"spec={spec}", *extra, *isolation(workdir))
    assert code == 0, out + err
    assert "self-test PASSED: planted bias detected" in out
    planted = rows(out, "planted")
    assert [(r["threshold"], r["truth"], r["expected"], r["got"], r["ok"]) for r in planted] == [
        ("stereoset", "100", "FAIL", "FAIL", "ok"), ("stereoset.lms", "100", "PASS", "PASS", "ok")]
    null = rows(out, "null")
    assert [r["truth"] for r in null] == ["50", "100"] and all(r["got"] != "FAIL" for r in null)
    ties = rows(out, "ties")
    assert [r["estimate / reason"] for r in ties] == [SS_TIED, LMS_TIED]


def test_truth_by_hand_against_the_metric(workdir: Path) -> None:
    # planted: in every item st > anti > unrelated, so every item is pro and both meaningful
    # sentences beat the unrelated one: SS_t = 100, LMS_t = 100 for each of the 13 targets,
    # SS = LMS = 100 and ICAT = 100 * min(100, 0) / 50 = 0
    prep = prepare(compose(["spec=stereoset", *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    est = run_oracle(prep, oracle, params, "planted")[0]["stereoset"].estimates
    assert est["ss"].value == 100.0 and est["lms"].value == 100.0 and est["icat"].value == 0.0
    assert est["ss.gender"].value == 100.0 and est["ss.intersentence"].value == 100.0
    # null: 11 targets have two items, one on each side (SS_t = 50); schoolboy and gentlemen
    # have one item each, on opposite sides (SS_t 100 and 0): SS = (11 * 50 + 100 + 0) / 13 = 50,
    # ICAT = 100 * min(50, 50) / 50 = 100
    fields = {s.id: s.fields for s in prep.stimuli.stimuli}
    side = stratified_sides(fields, strata, prep.composed.config.runtime.seed)
    single = {str(f["target"]): side[sid] for sid, f in fields.items() if f["target"] in ("schoolboy", "gentlemen")}
    assert len(single) == 2 and single["schoolboy"] != single["gentlemen"]
    est = run_oracle(prep, oracle, params, "null")[0]["stereoset"].estimates
    assert est["ss"].value == pytest.approx(50.0) and est["lms"].value == 100.0 and est["icat"].value == pytest.approx(100.0)
    truth = oracle.plan_truth("null", params, prep) if oracle.plan_truth else {}
    assert truth["ss"] == pytest.approx(50.0) and truth["icat"] == pytest.approx(100.0)


def item(sid: str, target: str, st: float, anti: float, un: float) -> Item:
    return Item(stimulus=sid, cell="base", target=target, bias_type="gender", split="intrasentence",
                stereotype=st, anti=anti, unrelated=un)


def test_every_comparison_tied_is_undefined_not_zero() -> None:
    # the authors' script counts a tie as anti (SS) and as not related (LMS): all-tied items
    # would read SS = 0 (a strong anti-stereotype bias) and LMS = 0
    p = StereoSetParams(n_resamples=200)
    e = scores_of([item(f"i{k}", "a", -1.0, -1.0, -1.0) for k in range(4)], p)
    assert e["ss"].value is None and e["ss"].note == SS_TIED
    assert e["lms"].value is None and e["lms"].note == LMS_TIED and e["icat"].value is None
    # the stereotype ties the anti-stereotype everywhere but both beat the unrelated one:
    # LMS is measured (100), SS and ICAT are not
    e = scores_of([item(f"i{k}", "a", -1.0, -1.0, -5.0) for k in range(4)], p)
    assert e["ss"].value is None and e["icat"].value is None and e["lms"].value == pytest.approx(100.0)
    # one item that does not tie: measured, the ties counted as anti as the authors do
    e = scores_of([item("i0", "a", -1.0, -2.0, -5.0), *[item(f"i{k}", "a", -1.0, -1.0, -5.0) for k in (1, 2, 3)]], p)
    assert e["ss"].value == pytest.approx(25.0)


def test_thresholds_that_hold_every_score_fail_the_selftest(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    # a band that holds every SS: the planted 100 passes it, and no sanity threshold is left
    code, out, _ = cli("selftest", "spec=stereoset", "thresholds=[{metric: stereoset, min: 0, max: 100}]",
                       *isolation(workdir))
    assert code == 1
    assert "no threshold detects the planted bias" in out and "self-test FAILED" in out
