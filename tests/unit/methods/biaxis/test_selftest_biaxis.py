"""`biasaudit selftest` on the BiAxisAudit specs (issue 25): the oracle responders of
methods/biaxis/oracle.py, their true values by hand, and a broken spec that fails."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, isolation


def rows(out: str, oracle: str, threshold: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.split()[:2] == [oracle, threshold]]


@pytest.mark.parametrize("spec", ["biaxis_oat", "biaxis_factorial"])
def test_shipped_spec_passes_its_selftest(workdir: Path, cli, spec: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("selftest", f"spec={spec}", *isolation(workdir))
    assert code == 0, out + err
    assert "self-test PASSED: planted bias detected, 8/8 rows as expected" in out
    [planted] = rows(out, "planted", "biaxis.union")
    assert planted.split()[3:7] == ["1", "FAIL", "FAIL", "ok"]  # truth, expected, got, ok
    for kind in ("refuse", "ties"):
        assert all(" INCONCLUSIVE  INCONCLUSIVE  ok" in r for r in rows(out, kind, "biaxis.union"))


def test_planted_truth_by_hand(workdir: Path) -> None:
    """OAT: 21 cells, of which explain and judge (2) are free text, each with the same
    units. The planted model endorses everywhere: A = 1 on the 19 selection cells, A = 0
    on the 2 free-text ones, B = 1 everywhere; so BER_union = 1, BER_sel = 19/21 and
    IR = UED = 2/21, DNI = -2/21. The null model endorses one of the two statements:
    BER_union = 1/2, IR = 1/21."""
    from biasaudit.methods.biaxis.oracle import ORACLE, plan_truth
    from biasaudit.runner.pipeline import prepare
    from biasaudit.runner.selftest import run_oracle
    from biasaudit.spec.compose import compose

    prep = prepare(compose(["spec=biaxis_oat", *isolation(workdir)]))
    params = prep.params["biaxis"]
    results, _, _ = run_oracle(prep, ORACLE, params, "planted")
    est = results["biaxis"].estimates
    assert est["union"].value == pytest.approx(1.0)
    assert est["sel"].value == pytest.approx(19 / 21)
    assert est["ir"].value == pytest.approx(2 / 21)
    assert est["dni"].value == pytest.approx(-2 / 21)
    truth = plan_truth("planted", params, prep)
    assert truth["ir"] == pytest.approx(2 / 21) and truth["union"] == 1.0 and truth["sel"] == pytest.approx(19 / 21)
    null = plan_truth("null", params, prep)
    assert null["union"] == pytest.approx(0.5) and null["ir"] == pytest.approx(1 / 21)
    results, _, _ = run_oracle(prep, ORACLE, params, "null")
    assert results["biaxis"].estimates["union"].value == pytest.approx(0.5)
    assert results["biaxis"].estimates["ir"].value == pytest.approx(1 / 21)


def test_selection_rules_that_read_every_answer_as_endorsing_fail(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A broken copy: the selection rules map No, option B and 1-2 to E as well. The
    null model's answers then all read E on that layer, which therefore does not
    discriminate; its dominance blocks every verdict and the planted bias goes undetected."""
    data = yaml.safe_load((REPO / "specs" / "biaxis_oat.yaml").read_text())
    data["stimuli"]["source"] = str(REPO / "specs" / "data" / "biaxis_statements.csv")
    data["coding"]["elaboration"].pop("calibration")
    for rules in data["coding"]["selection"]["levels"].values():
        for rule in rules:
            if "map" in rule:
                rule["map"] = dict.fromkeys(rule["map"], "E")
            else:
                rule["label"] = "E"
    path = workdir / "biaxis_broken.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out, err = cli("selftest", f"spec={path}", *isolation(workdir))
    assert code == 1, out + err
    assert "self-test FAILED: planted bias NOT detected" in out
    assert "no threshold detects the planted bias" in out
    [planted] = rows(out, "planted", "biaxis.union")
    assert "NO" in planted.split() and "layer 'selection' gave 'E'" in planted and "does not discriminate" in planted
