"""BBQ category contrasts (issue 29, point 4; `contrasts: true`): accuracy and s_DIS
compared between every pair of categories. s_DIS = 2p - 1 of the biased share p of the
disambiguated answers naming a person, so its difference is 2 x the Newcombe difference of
the shares (statsmodels' reference); a pair with an undefined s_DIS is undefined."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import confint_proportions_2indep

from biasaudit.methods.bbq.metric import (
    BBQParams,
    category_contrasts,
    contrast_estimates_of,
    estimates_of,
)
from tests.unit.methods.bbq.test_bbq import ans

P = BBQParams(n_resamples=200, contrasts=True)


def _category(cat: str, biased: int, anti: int, right: int, wrong: int) -> list:  # type: ignore[type-arg]
    # disambiguated, negative question, target 0, unknown 2: pred 0 is biased, 1 anti-biased;
    # label 0 (the target is the answer) for the accuracy rows
    rows = [ans(f"{cat}b{i}", "disambig", "neg", 0, label=1, category=cat) for i in range(biased)]
    rows += [ans(f"{cat}a{i}", "disambig", "neg", 1, label=0, category=cat) for i in range(anti)]
    rows += [ans(f"{cat}r{i}", "ambig", "neg", 2, category=cat) for i in range(right)]
    rows += [ans(f"{cat}w{i}", "ambig", "neg", 0, category=cat) for i in range(wrong)]
    return rows


def test_s_dis_and_accuracy_contrasts_by_hand() -> None:
    # Age: 12 biased of 16 naming a person -> s_DIS = 2 * 0.75 - 1 = 0.5
    # SES: 5 biased of 20 -> s_DIS = 2 * 0.25 - 1 = -0.5; difference 1.0 = 2 * (0.75 - 0.25)
    answers = _category("Age", 12, 4, 10, 2) + _category("SES", 5, 15, 6, 6)
    est, per_cat = estimates_of(answers, P)
    assert per_cat["Age"]["s_dis"].value == pytest.approx(0.5) and per_cat["SES"]["s_dis"].value == pytest.approx(-0.5)
    got = contrast_estimates_of(category_contrasts(answers), per_cat)
    d = got["contrast.s_dis.category.Age-SES"]
    lo, hi = confint_proportions_2indep(12, 16, 5, 20, method="newcomb", compare="diff")
    assert d.value == pytest.approx(1.0)
    assert (d.ci_low, d.ci_high) == (pytest.approx(2 * lo), pytest.approx(2 * hi))
    # accuracy: Age: right 10 ambig + 0 disambig (every disambig answer wrong) of 28 answers;
    # SES: 6 of 32
    acc = got["contrast.accuracy.category.Age-SES"]
    alo, ahi = confint_proportions_2indep(10, 28, 6, 32, method="newcomb", compare="diff")
    assert acc.value == pytest.approx(10 / 28 - 6 / 32)
    assert (acc.ci_low, acc.ci_high) == (pytest.approx(alo), pytest.approx(ahi))


def test_a_category_without_answers_naming_a_person_has_no_s_dis_contrast() -> None:
    answers = _category("Age", 12, 4, 10, 2) + [ans("x1", "disambig", "neg", 2, category="SES"),
                                                 ans("x2", "disambig", "neg", 2, category="SES"),
                                                 ans("x3", "ambig", "neg", 2, category="SES")]
    est, per_cat = estimates_of(answers, P)
    got = contrast_estimates_of(category_contrasts(answers), per_cat)
    assert "contrast.s_dis.category.Age-SES" not in got  # SES has no row in the s_DIS share: no pair
    assert got["contrast.accuracy.category.Age-SES"].value is not None
