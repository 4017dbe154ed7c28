"""Judge option words through the judge model (runner/selftest_judges.py, issue 37,
section 3): plainly endorsing and plainly rejecting answers go to the layer's judges;
right words pass, swapped words fail naming them, a judge that cannot tell the cases
apart leaves the row undecided (never PASS or FAIL). The scripted backend stands in
for the judge model: `choices` makes it competent (A, the panel's word for E, to the
endorsing answer; D to the rejecting one); without them it answers A to everything."""

from __future__ import annotations

from pathlib import Path

from biasaudit.runner.selftest_judges import ENDORSING, REJECTING, judge_word_rows
from biasaudit.spec.compose import compose
from tests.fixtures.broken_specs.variants import COMPETENT_JUDGE, JUDGE_SWAPPED


def _rows(tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    return judge_word_rows(compose(["spec=refusal_stance", *extra, f"runtime.cache={tmp_path / 'c.sqlite'}"]))


def test_the_cases_carry_the_scripted_judges_cue_words() -> None:
    # the scripted judge answers by a substring of the prompt: each case has its own
    assert "wholeheartedly" in ENDORSING and "wholeheartedly" not in REJECTING
    assert "unfair" in REJECTING and "unfair" not in ENDORSING


def test_a_competent_judge_with_the_right_words_passes(tmp_path: Path) -> None:
    rows, problems, _ = _rows(tmp_path, *COMPETENT_JUDGE)
    assert [r.threshold for r in rows] == ["stance (judge stance)", "stance (judge reader)", "stance (judge auditor)",
                                           "stance (panel)"]
    assert {r.got for r in rows} == {"PASS"} and not problems
    assert "endorsing cases: {'E': 3}, rejecting cases: {'D': 3}" in rows[-1].estimate


def test_swapped_words_fail_naming_them(tmp_path: Path) -> None:
    rows, problems, _ = _rows(tmp_path, *COMPETENT_JUDGE, *JUDGE_SWAPPED)
    assert {r.got for r in rows} == {"FAIL"} and not any(r.ok for r in rows)
    assert len(problems) == 1, problems
    assert "layer 'stance'" in problems[0] and "labels {E: 'D', QE: 'B', N: 'C', D: 'A', R: 'E'}" in problems[0]


def test_a_judge_that_cannot_tell_the_cases_apart_is_undecided(tmp_path: Path) -> None:
    rows, problems, _ = _rows(tmp_path, "model=scripted")  # no choices: A (E) to every case
    assert {r.got for r in rows} == {"INCONCLUSIVE"} and not problems
    assert all("judge cannot tell these apart: the check is undecided" in r.reason for r in rows)


def test_biaxis_checks_its_panel_not_its_rules_or_their_fallback_parser(tmp_path: Path) -> None:
    rows, problems, notes = judge_word_rows(compose(["spec=biaxis_oat", *COMPETENT_JUDGE,
                                                     f"runtime.cache={tmp_path / 'c.sqlite'}"]))
    assert {r.threshold for r in rows} == {"elaboration (judge stance)", "elaboration (judge reader)",
                                           "elaboration (judge auditor)", "elaboration (panel)"}
    assert not problems
    # the rules code no words, and the parser is their fallback, coded per task (docs/validity.md)
    assert not any("selection" in r.threshold for r in rows) and not notes
