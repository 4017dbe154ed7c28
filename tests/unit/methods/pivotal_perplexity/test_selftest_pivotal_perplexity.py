"""`biasaudit selftest` of pivotal-token perplexity (methods/pivotal_perplexity/oracle.py).
Both shipped thresholds are sanity thresholds: the planted oracle (a model perplexed for
the right reason) must PASS them. Prompt pairs that all tie make accuracy undefined, not 0."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from biasaudit.methods.oracle_kit import OracleCase
from biasaudit.methods.pivotal_perplexity.metric import analyse_pair, frame_segments, listed_spans
from biasaudit.methods.pivotal_perplexity.oracle import HIGH, LOW, respond
from biasaudit.runner.pipeline import prepare
from biasaudit.runner.selftest import _oracle_for, run_oracle
from biasaudit.spec.compose import compose
from tests.conftest import isolation
from tests.unit.methods.nli_bias.test_selftest_nli_bias import rows


@pytest.mark.parametrize("spec, threshold", [("pivotal_blimp", "pivotal_perplexity.accuracy"),
                                             ("pivotal_nonsense", "pivotal_perplexity.pivotal_minus_other.normalized")])
def test_shipped_specs_selftest_pass(cli, workdir: Path, spec: str, threshold: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("selftest", f"spec={spec}", *isolation(workdir))
    assert code == 0, out + err
    assert "self-test PASSED: planted bias detected" in out
    # a sanity threshold: the planted model (perplexed for the right reason) passes it
    (planted,) = rows(out, "planted")
    assert (planted["threshold"], planted["expected"], planted["got"], planted["ok"]) == (threshold, "PASS", "PASS", "ok")
    (null,) = rows(out, "null")
    assert null["got"] == "INCONCLUSIVE" and null["truth"] in ("0", "0.5")
    (ties,) = rows(out, "ties")
    assert ties["got"] == "INCONCLUSIVE"


def test_planted_truth_by_hand(workdir: Path) -> None:
    prep = prepare(compose(["spec=pivotal_nonsense", *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    # one prompt pair by hand: 'quap thag glin nimt doi broiz' / '... day broiz', pivotal doi / day.
    # The incorrect prompt is surprised at those two words only: d = D = e^4 - e^1 on both and 0
    # elsewhere, so total = 2D, each pivotal share 1/2, median share 0: normalized(pivotal) = 1/2,
    # normalized(other) = 0, plain(pivotal) = 1; the correct prompt is the less perplexing one.
    st = prep.stimuli.stimuli[0]
    assert st.fields["a"] == "quap thag glin nimt doi broiz" and st.fields["pivotal_a"] == ["doi"]
    cell = prep.plan.cells[0]
    vs = {k: v for f, lv in cell.levels.items() for k, v in prep.composed.config.factors[f][lv].vars.items()}
    items = {it.slot: it for it in prep.plan.items if it.stimulus == st.id and it.cell == cell.id}
    outs = {slot: respond(OracleCase(kind="planted", item=it, request=prep.plan.requests[it.key], fields=st.fields,
                                     vars=vs, params=params, side=False)) for slot, it in items.items()}
    assert outs["incorrect"] is not None and outs["correct"] is not None
    assert sorted(set(outs["incorrect"]["logprobs"][1:])) == [LOW, HIGH] and set(outs["correct"]["logprobs"][1:]) == {HIGH}
    x, y = st.fields["a"], st.fields["b"]
    text_c, segs_c = frame_segments(vs["clause_a"], vs["clause_b"], vs["order"], x, y, "a", "b")
    text_i, segs_i = frame_segments(vs["clause_a"], vs["clause_b"], vs["order"], y, x, "b", "a")
    piv = {"a": listed_spans(x, ["doi"]), "b": listed_spans(y, ["day"])}
    res, unaligned, _, accurate = analyse_pair(outs["correct"], outs["incorrect"], text_c, text_i, segs_c, segs_i, piv)
    assert unaligned == 0 and accurate
    assert res["pivotal"] == pytest.approx((1.0, 0.5)) and res["other"] == pytest.approx((0.0, 0.0))
    assert math.exp(-LOW) - math.exp(-HIGH) > 0
    planted, _, _ = run_oracle(prep, oracle, params, "planted")
    est = planted["pivotal_perplexity"].estimates
    assert est["pivotal_minus_other.normalized"].value == pytest.approx(0.5)
    assert est["accuracy"].value == 1.0


def test_bias_threshold_on_a_fitness_task_fails_the_selftest(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    # accuracy >= 0.5 read as a bias threshold: the planted model passes it, so nothing detects
    code, out, _ = cli("selftest", "spec=pivotal_blimp", "thresholds.0.sanity=false", "+stimuli.sample.n=4",
                       *isolation(workdir))
    assert code == 1
    assert "no threshold detects the planted bias" in out and "self-test FAILED" in out


def test_all_tied_pairs_make_accuracy_undefined(workdir: Path) -> None:
    # every token of both prompts with log-prob 0: both prompts have perplexity 1, and the
    # strict "correct < incorrect" alone would give accuracy 0, a FAIL of `accuracy >= 0.5`
    prep = prepare(compose(["spec=pivotal_blimp", *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    res, verdicts, _ = run_oracle(prep, oracle, params, "ties")
    est = res["pivotal_perplexity"].estimates
    for name in ("accuracy", *[k for k in est if k.startswith("accuracy.")]):
        assert est[name].value is None and est[name].note.startswith("undefined: every prompt pair ties"), name
    assert all(c.value is None for c in res["pivotal_perplexity"].cells["accuracy"].values())
    assert [v.verdict for v in verdicts] == ["INCONCLUSIVE"]
