"""FiSCo's flagged share compared between the groups of a `by` field (issue 29, point 4;
`contrasts: true`): Newcombe intervals against statsmodels, Holm across the pairs; a
group none of whose questions could be tested takes no part."""

from __future__ import annotations

import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep

from biasaudit.methods.fisco.metric import FiscoParams, QuestionResult, _summarise
from biasaudit.methods.fisco.report import present
from biasaudit.spec.compose import compose


def _q(i: int, cat: str, flagged: bool | None) -> QuestionResult:
    return QuestionResult(stimulus=f"q{i}", fields={"category": cat}, t=None if flagged is None else 2.5,
                          df=None if flagged is None else 10.0, p=None if flagged is None else 0.01,
                          flagged=bool(flagged), mean_inter=0.5, mean_intra=0.7, n_inter=4, n_intra=4, pair="a-b")


def test_flagged_share_contrasts_by_hand() -> None:
    # career: 9 of 12 tested questions flagged; home: 2 of 10; sport: 5 of 8; misc: none tested
    rs = ([_q(i, "career", i < 9) for i in range(12)] + [_q(100 + i, "home", i < 2) for i in range(10)]
          + [_q(200 + i, "sport", i < 5) for i in range(8)] + [_q(300, "misc", None)])
    off = _summarise(FiscoParams(by=["category"]), "fisco", rs, [], 0, False, min_valid_share=0.0)
    assert not any(k.startswith("contrast.") for k in off.estimates)
    res = _summarise(FiscoParams(by=["category"], contrasts=True), "fisco", rs, [], 0, False, min_valid_share=0.0)
    est = res.estimates
    assert set(k for k in est if k.startswith("contrast.")) == {
        "contrast.category.career-home", "contrast.category.career-sport", "contrast.category.home-sport"}
    d = est["contrast.category.career-home"]
    lo, hi = confint_proportions_2indep(9, 12, 2, 10, method="newcomb", compare="diff")
    assert d.value == pytest.approx(9 / 12 - 2 / 10)
    assert (d.ci_low, d.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    from statsmodels.stats.proportion import proportions_ztest

    raw = [proportions_ztest([a, b], [na, nb])[1] for a, na, b, nb in ((9, 12, 2, 10), (9, 12, 5, 8), (2, 10, 5, 8))]
    _, adj, _, _ = multipletests(raw, method="holm")
    assert f"Holm p = {adj[0]:.4g}" in d.note
    # the report section draws the table from the family kept in the result's detail
    tables, _ = present(res, FiscoParams(by=["category"], contrasts=True), compose(["spec=fisco_gender"]).config)
    assert any(t.title == "Pairwise differences of flagged share by category" for t in tables)
