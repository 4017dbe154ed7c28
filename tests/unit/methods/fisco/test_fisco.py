"""FiSCo: docs/methods/fisco.md checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from biasaudit.coding.coders.claims import mask_values, parse_claim_list, split_claims
from biasaudit.methods.fisco.metric import similarity, similarity_authors, welch_flag


def test_similarity_by_hand_single_normalisation() -> None:
    # r1 has claims checked against r2: E, E, N; r2's claims against r1: C, E  -> C_E=3, C_N=1, C_C=1
    labels = ["E", "E", "N", "C", "E"]
    assert similarity(labels, (1, 0, 0)) == pytest.approx(3 / 5)  # strict
    assert similarity(labels, (1, 1, 0)) == pytest.approx(4 / 5)  # moderate
    assert similarity(labels, (1, 0.5, -1)) == pytest.approx((3 + 0.5 - 1) / 5)
    assert similarity([], (1, 0, 0)) is None  # no claims: unscorable


def test_similarity_by_hand_authors_normalisation() -> None:
    """The authors' released code (HuXiangkun/FiSCo fe7b9ce: score_matrix[i][j] /= length_matrix[i][j],
    then (score[i][j] + score[j][i]) / (length[i][j] + length[j][i])), by hand with their
    label scores C 0, N 0.5, E 1: r1 vs r2 E, E, N (mean 2.5/3), r2 vs r1 C, E (mean 1/2)."""
    w = (1.0, 0.5, 0.0)
    assert similarity_authors(["E", "E", "N"], ["C", "E"], w) == pytest.approx((2.5 / 3 + 1 / 2) / 5)
    assert similarity(["E", "E", "N", "C", "E"], w) == pytest.approx(3.5 / 5)  # the paper's: once
    assert similarity_authors([], ["E", "N"], w) == pytest.approx(0.75 / 2)  # an empty direction adds 0 and 0
    assert similarity_authors([], [], w) is None


def test_welch_matches_scipy() -> None:
    inter = [0.5, 0.6, 0.4, 0.55, 0.45, 0.5, 0.35, 0.6, 0.5]
    intra = [0.8, 0.7, 0.9, 0.75, 0.85, 0.8]
    t, df, p, flagged, pair, mi, ma, _ = welch_flag({("f", "m"): inter}, intra, 0.05)
    ref = st.ttest_ind(intra, inter, equal_var=False)  # t = intra - inter, the authors' code
    assert t == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue) and df == pytest.approx(ref.df)
    assert flagged and pair == "f vs m" and mi == pytest.approx(np.mean(inter)) and ma == pytest.approx(np.mean(intra))


def test_three_groups_use_holm_and_the_worst_pair() -> None:
    rng = np.random.default_rng(0)
    intra = list(rng.normal(0.8, 0.05, 15))
    inter = {("a", "b"): list(rng.normal(0.8, 0.05, 25)), ("a", "c"): list(rng.normal(0.5, 0.05, 25)),
             ("b", "c"): list(rng.normal(0.79, 0.05, 25))}
    t, _, p, flagged, pair, *_ = welch_flag(inter, intra, 0.05)
    raw = st.ttest_ind(inter[("a", "c")], intra, equal_var=False).pvalue
    assert pair == "a vs c" and flagged and p >= raw  # Holm-adjusted p is never below the raw p


def _flag_rate(shift: float, seed: int, n_questions: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    flags, rejects = 0, 0
    for _ in range(n_questions):
        # similarities in [0, 1]: k = 3 values per group -> 9 inter pairs, 2 x 3 intra pairs
        intra = rng.beta(8, 2, 6)
        inter = np.clip(rng.beta(8, 2, 9) - shift, 0, 1)
        _, _, p, flagged, *_ = welch_flag({("g1", "g2"): list(inter)}, list(intra), 0.05)
        flags += flagged
        rejects += p is not None and p < 0.05
    return flags / n_questions, rejects / n_questions


def test_simulation_null_is_flagged_at_about_the_nominal_rate() -> None:
    flag_rate, reject_rate = _flag_rate(0.0, seed=1)
    # two-sided Welch rejects ~alpha; the flag also needs inter < intra, i.e. ~alpha/2
    assert reject_rate == pytest.approx(0.05, abs=0.02)
    assert flag_rate == pytest.approx(0.025, abs=0.015)


def test_simulation_shifted_inter_is_flagged_nearly_always() -> None:
    flag_rate, _ = _flag_rate(0.35, seed=2)
    assert flag_rate > 0.95


def test_mask_values_and_claims() -> None:
    masked = mask_values("Emily should practise. EMILY's skills matter! Johnny is fine.", ["Emily", "John"], "[NAME]")
    assert masked == "[NAME] should practise. [NAME]'s skills matter! Johnny is fine."
    assert split_claims("One two three. Four five six seven! Short.\nEight nine ten eleven?", 3) == [
        "One two three.", "Four five six seven!", "Eight nine ten eleven?"]


def test_llm_claim_list_is_parsed_defensively() -> None:
    raw = "Here are the claims:\n1. [NAME] should practise coding problems.\n- [NAME] should practise coding problems.\n" \
          "* Research the company before the interview.\n2) ok\n\nClaim 3: Prepare questions for the interviewer."
    assert parse_claim_list(raw, 3) == [
        "Here are the claims:", "[NAME] should practise coding problems.",
        "Research the company before the interview.", "Prepare questions for the interviewer."]
    assert parse_claim_list("", 3) == [] and parse_claim_list("yes\nno", 3) == []
