"""`biasaudit selftest` on refusal_stance (label rates over a refusal and a stance layer,
issue 25): the oracle responders of methods/label_rates/oracle.py, their true values by
hand, and broken specs that fail."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, isolation


def rows(out: str, oracle: str, threshold: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.split()[:2] == [oracle, threshold]]


def test_refusal_stance_passes_its_selftest(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("selftest", "spec=refusal_stance", *isolation(workdir))
    assert code == 0, out + err
    assert "self-test PASSED: planted bias detected, 8/8 rows as expected" in out
    [planted] = rows(out, "planted", "endorsement_rate")
    assert planted.split()[3:7] == ["1", "FAIL", "FAIL", "ok"]  # truth, expected, got, ok
    # each metric gets its own truth: the planted model never refuses; the refusing one always does
    [never] = rows(out, "planted", "refusal_rate")
    assert never.split()[2:4] == ["0", "PASS"] and "NO" not in never.split()
    [always] = rows(out, "refuse", "refusal_rate")
    assert always.split()[2:6] == ["1", "FAIL", "FAIL", "ok"]


def test_truth_by_hand(workdir: Path) -> None:
    """4 statements x 4 cells. Planted: every answer endorses (stance E), none refuses:
    endorsement rate 16/16 = 1, refusal rate 0/16 = 0. Null: 2 of the 4 statements are
    endorsed, in every cell: endorsement rate 8/16 = 1/2."""
    from biasaudit.methods.label_rates.oracle import ORACLE, plan_truth
    from biasaudit.runner.pipeline import prepare
    from biasaudit.runner.selftest import run_oracle
    from biasaudit.spec.compose import compose

    prep = prepare(compose(["spec=refusal_stance", *isolation(workdir)]))
    endorse, refuse = prep.params["endorsement_rate"], prep.params["refusal_rate"]
    results, _, _ = run_oracle(prep, ORACLE, endorse, "planted")
    assert results["endorsement_rate"].estimates["rate"].value == 1.0
    assert results["refusal_rate"].estimates["rate"].value == 0.0
    assert plan_truth("planted", endorse, prep)["rate"] == 1.0
    assert plan_truth("planted", refuse, prep)["rate"] == 0.0
    results, _, _ = run_oracle(prep, ORACLE, endorse, "null")
    assert results["endorsement_rate"].estimates["rate"].value == pytest.approx(0.5)
    assert plan_truth("null", endorse, prep)["rate"] == pytest.approx(0.5)


def test_refusal_rules_that_match_everything_fail(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A broken copy: the refusal rules fire on any character, so every answer reads as a
    refusal; the null and planted models, which never refuse, FAIL the refusal threshold."""
    data = yaml.safe_load((REPO / "specs" / "refusal_stance.yaml").read_text())
    data["stimuli"]["source"] = str(REPO / "specs" / "data" / "biaxis_statements.csv")
    data["coding"]["refusal"]["rules"] = [{"pattern": ".", "label": "refuse"}]
    path = workdir / "refusal_broken.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out, err = cli("selftest", f"spec={path}", *isolation(workdir))
    assert code == 1, out + err
    assert "self-test FAILED" in out
    for kind in ("null", "planted"):
        [row] = rows(out, kind, "refusal_rate")
        assert row.split()[2:6] == ["0", "PASS", "FAIL", "NO"]


def test_unreachable_threshold_fails(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """An endorsement gate at 1.0 cannot be crossed: the planted bias goes undetected."""
    code, out, err = cli("selftest", "spec=refusal_stance", "thresholds.1.max=1.0", *isolation(workdir))
    assert code == 1, out + err
    assert "problem: no threshold detects the planted bias" in out
    assert "self-test FAILED: planted bias NOT detected" in out
