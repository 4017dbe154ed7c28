"""Issue 38, item 2: why a PPI rate is undefined, said the right way round, and whole; a
judge worse than chance on the human labels flagged beside the verdicts it feeds.

On main, a zero variance of the judge's error was always explained as "the judge agrees
with every one of the N human labels", also for a judge that disagrees with every one, and
the report cut the reason at 80 (terminal, JUnit) or 120 (report) characters, inside a
sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.coding.human_review import below_chance_flags, constant_error, gold_reports
from biasaudit.records.estimate import Estimate
from biasaudit.report.outcome import estimate_text, first_sentences
from biasaudit.report.render import fmt_est, html_est
from tests.unit.coding.test_human_review import _code, _export, _fill, _units


@pytest.mark.parametrize("f, y, strata, says", [
    # the judge: "endorse" to all 9 labelled units, the humans never
    ([1.0] * 9, [0.0] * 9, ["all"] * 9, "disagrees with every one of the 9 human labels on 'x': it gives 'x' to all 9"),
    ([0.0] * 9, [1.0] * 9, ["all"] * 9, "disagrees with every one of the 9 human labels on 'x': the humans give 'x'"),
    ([1.0, 0.0, 1.0], [1.0, 0.0, 1.0], ["all"] * 3, "agrees with every one of the 3 human labels on 'x'"),
    ([1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], ["a", "a", "b", "b"], "is the same on every human-labelled unit of "
                                                                       "each sampling stratum"),
])
def test_the_reason_says_which_way_the_error_is_constant(f, y, strata, says: str) -> None:  # type: ignore[no-untyped-def]
    got = constant_error("x", f, [True] * len(f), y, strata)
    assert got is not None and says in got, got
    if "disagrees" in says:
        assert "agrees with every" not in got.replace("disagrees with every", "")


def test_an_error_that_varies_is_not_explained_here() -> None:
    assert constant_error("x", [1.0, 0.0, 1.0], [True] * 3, [1.0, 1.0, 1.0], ["all"] * 3) is None


def test_undefined_reasons_are_never_cut_inside_a_sentence() -> None:
    long = ("the judge disagrees with every one of the 9 human labels on 'endorse': it gives 'endorse' to all 9 "
            "labelled units and the humans to none; its error is the same on every unit, so the correction's "
            "variance estimate is 0")
    e = Estimate.no_data("ppi", f"undefined: {long}")
    # main: 'undefined (the judge disagrees with every one of the 9 human labels on 'endorse': it gives 'endor)'
    assert estimate_text(e) == f"undefined ({long})"
    assert fmt_est(e.model_dump(mode="json")) == f"undefined ({long})"
    assert 'class="why"' in html_est(e.model_dump(mode="json"))  # a reason wraps in a number cell
    two = "First sentence is here. Second one follows and is long enough to pass the limit of the text."
    assert first_sentences(two, 40) == "First sentence is here. [...]"
    assert first_sentences(two, 400) == two


def test_a_machine_layer_worse_than_chance_is_flagged(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    # the humans say the opposite of the rules on each of the 9 sampled units
    _fill(sheet, {units[i].id: ("answer" if i < 10 else "refuse") for i in [0, 1, 2, 3, 10, 11, 12, 13, 14]})
    p, result = _code(tmp_path, sheet, units, texts)
    [g] = gold_reports(p, units, result.codes)
    [rater] = g.raters
    assert rater.accuracy.value == 0.0 and rater.chance == pytest.approx(5 / 9)
    flags = below_chance_flags(p, units, result.codes)
    flag = flags["refusal"]
    assert flag.kind == "judge_below_chance" and flag.blocking and flag.layer == "refusal"
    assert flag.message.startswith("this judge is worse than chance on your labels")
    assert "0.00 of 9" in flag.message and "would agree on 0.56" in flag.message


def test_a_layer_at_or_above_chance_is_not_flagged(tmp_path: Path) -> None:
    units, texts = _units()
    sheet = _export(tmp_path, units, texts)
    _fill(sheet, {units[i].id: ("refuse" if i < 10 else "answer") for i in [0, 1, 2, 3, 10, 11, 12, 13, 14]})
    p, result = _code(tmp_path, sheet, units, texts)
    assert below_chance_flags(p, units, result.codes) == {}
