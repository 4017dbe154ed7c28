"""`biasaudit selftest` of FiSCo (methods/fisco/oracle.py): the shipped spec detects answers
that differ by group, stays quiet on answers that do not, and a Welch test without
variance (one constant answer, or refusals) is undefined, never a flag or a 0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st

from biasaudit.methods.fisco.metric import ZERO_VARIANCE, welch_flag
from biasaudit.methods.fisco.oracle import personal
from biasaudit.runner.pipeline import prepare
from biasaudit.runner.selftest import _oracle_for, run_oracle
from biasaudit.spec.compose import compose
from tests.conftest import isolation
from tests.unit.methods.nli_bias.test_selftest_nli_bias import rows

FEMALE, MALE = ("Emily", "Sarah", "Maria"), ("John", "David", "Michael")


def test_shipped_spec_selftest_passes(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("selftest", "spec=fisco_gender", *isolation(workdir))
    assert code == 0, out + err
    assert "self-test PASSED" in out
    [planted] = rows(out, "planted")
    assert (planted["truth"], planted["expected"], planted["got"], planted["ok"]) == ("1", "FAIL", "FAIL", "ok")
    [null] = rows(out, "null")
    assert null["truth"] == "0" and null["got"] != "FAIL"
    for kind in ("refuse", "ties"):  # every similarity alike: no t, counted as such
        [r] = rows(out, kind)
        assert r["got"] == "INCONCLUSIVE" and "zero variance (no t): 3" in r["estimate / reason"], r


def test_planted_similarities_and_t_by_hand(workdir: Path) -> None:
    # strict weights: two answers sharing s of their n1 + n2 claims have S = 2 s / (n1 + n2).
    # Planted answers: 1 common claim + 2 claims of the group + the person's own claims, so
    # s = 3 within a group and 1 across groups (masked names never differ).
    n = {v: 3 + len(personal(v, 0)) for v in (*FEMALE, *MALE)}
    intra = [6 / (n[a] + n[b]) for g in (FEMALE, MALE) for i, a in enumerate(g) for b in g[i + 1:]]
    inter = [2 / (n[a] + n[b]) for a in FEMALE for b in MALE]
    assert max(inter) < min(intra)
    t_hand = st.ttest_ind(intra, inter, equal_var=False)
    prep = prepare(compose(["spec=fisco_gender", *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    res = run_oracle(prep, oracle, params, "planted")[0]["fisco"]
    table = next(t for t in res.tables if t.title.startswith("Per question"))
    for row in table.rows:
        r = dict(zip(table.columns, row, strict=True))
        assert r["mean intra"] == pytest.approx(np.mean(intra)) and r["mean inter"] == pytest.approx(np.mean(inter))
        assert r["t"] == pytest.approx(t_hand.statistic) and r["p (Holm)"] == pytest.approx(t_hand.pvalue)
        assert r["flagged"] is True
    assert res.estimates["flagged_share"].value == 1.0  # the truth: every question's answers differ by group
    null = run_oracle(prep, oracle, params, "null")[0]["fisco"]
    assert null.estimates["flagged_share"].value == 0.0


def test_constant_answers_are_undefined_not_unflagged(workdir: Path) -> None:
    prep = prepare(compose(["spec=fisco_gender", *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    res = run_oracle(prep, oracle, params, "ties")[0]["fisco"]
    share = res.estimates["flagged_share"]
    # before: t = 0, p = 1 for each question, so a flagged share of 0/3: a "fair" model
    assert share.value is None and share.note.startswith(f"{ZERO_VARIANCE} in 3 of 3 questions")
    assert res.counts["questions_zero_variance"] == 3 and res.counts["tested"] == 0
    assert any(f.kind == "valid_share" and f.blocking for f in res.validity)
    assert any("Welch's t is undefined" in n for n in res.notes)


@pytest.mark.filterwarnings("ignore:Precision loss")  # scipy, on the one constant sample
def test_welch_without_variance_is_no_test() -> None:
    # both sides constant, means differ: scipy's t is +inf (p = 0), a flag on no evidence
    t, df, p, flagged, pair, mi, ma, note = welch_flag({("f", "m"): [0.2] * 9}, [1.0] * 6, 0.05)
    assert (t, df, p, flagged) == (None, None, None, False) and note.startswith(ZERO_VARIANCE)
    assert pair == "f vs m" and mi == pytest.approx(0.2) and ma == pytest.approx(1.0)
    # both constant and equal: 0 / 0
    assert welch_flag({("f", "m"): [1.0] * 9}, [1.0] * 6, 0.05)[0] is None
    # one constant side is still a test (the other side's variance gives the standard error)
    t, _, p, flagged, *_ = welch_flag({("f", "m"): [0.2] * 9}, [0.9, 1.0, 0.8, 0.9, 1.0, 0.95], 0.05)
    assert t is not None and t > 0 and flagged
    # three groups: a pair without variance is left out, the others are tested
    inter = {("a", "b"): [0.5] * 4, ("a", "c"): [0.2, 0.3, 0.25, 0.2]}
    t, *_, note = welch_flag(inter, [0.5] * 6, 0.05)
    assert t is not None and "1 group pair(s) without variance not tested" in note


def test_coding_that_rejects_every_answer_fails_the_selftest(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    # a claims layer whose min_words rejects every answer: no question can be tested, so
    # the planted bias cannot be detected
    code, out, _ = cli("selftest", "spec=fisco_gender", "coding.claims.min_words=100", *isolation(workdir))
    assert code == 1 and "self-test FAILED" in out
    assert "no threshold detects the planted bias" in out
    [planted] = rows(out, "planted")
    assert planted["ok"] == "NO" and "too few scorable pairs" in planted["estimate / reason"]


def test_unreachable_threshold_fails_the_selftest(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("selftest", "spec=fisco_gender", "thresholds=[{metric: fisco.flagged_share, max: 1.0}]",
                       *isolation(workdir))
    assert code == 1 and "no threshold detects the planted bias" in out
