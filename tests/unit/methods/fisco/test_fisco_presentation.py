"""FiSCo's report section (`MetricDef.present`, issue 28): the tables and plots it declares
from the metric's records are those `compute` made itself before (recorded in
tests/fixtures/presentation), flagged questions' evidence and the contrasts included."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.methods.fisco.records import FiscoDetail
from tests.unit.methods.presentation import check_case

CASES = [
    ("fisco_null", ["spec=fisco_gender"], "null"),
    ("fisco_planted", ["spec=fisco_gender"], "planted"),
    ("fisco_refuse", ["spec=fisco_gender"], "refuse"),
    ("fisco_contrasts_planted", ["spec=fisco_gender", "+metrics.0.contrasts=true"], "planted"),
]


# capsys: the ROUGE-L baseline imports absl, whose log handler keeps the sys.stderr of its
# first import and closes it when a later run's logging setup (Hydra, in a CLI test of the
# same process) closes the handlers; under capsys that stream is this test's own, not
# pytest's capture of the whole session.
@pytest.mark.parametrize(("case", "overrides", "kind"), CASES, ids=[c[0] for c in CASES])
def test_report_section_shows_what_compute_showed(case: str, overrides: list[str], kind: str, workdir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    check_case(case, overrides, kind, workdir)


def test_every_question_is_in_the_detail_the_tested_ones_in_the_items(workdir: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    res = check_case("fisco_planted", ["spec=fisco_gender"], "planted", workdir)["fisco"]
    detail = FiscoDetail.model_validate(res.detail)
    assert len(detail.questions) == res.counts["questions"]
    tested = [q for q in detail.questions if q.t is not None]
    assert [q.stimulus for q in tested] == [x.stimulus for x in res.items]
    assert [q.t for q in tested] == [x.diff for x in res.items]
