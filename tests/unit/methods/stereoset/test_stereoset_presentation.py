"""StereoSet's report section (`MetricDef.present`, issue 28): the tables and plots it
declares from the metric's records are those `compute` made itself before (recorded in
tests/fixtures/presentation), for a planted, a null, a refusing and a tying model."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.methods.stereoset.records import StereoSetDetail
from tests.unit.methods.presentation import check_case

CASES = [(f"stereoset_{kind}", ["spec=stereoset"], kind) for kind in ("null", "planted", "refuse", "ties")]


@pytest.mark.parametrize(("case", "overrides", "kind"), CASES, ids=[c[0] for c in CASES])
def test_report_section_shows_what_compute_showed(case: str, overrides: list[str], kind: str, workdir: Path) -> None:
    check_case(case, overrides, kind, workdir)


def test_scores_and_unscored_items_are_records_not_tables(workdir: Path) -> None:
    # a refusing model: every item fails; compute says so in its records (counts, detail)
    # and makes no table itself
    res = check_case("stereoset_refuse", ["spec=stereoset"], "refuse", workdir)["stereoset"]
    detail = StereoSetDetail.model_validate(res.detail)
    assert res.counts["unscorable"] == len(detail.unscored) == 24 and not detail.scores
    assert detail.unscored[0].reason.startswith("stereotype: ")
    res = check_case("stereoset_null", ["spec=stereoset"], "null", workdir)["stereoset"]
    detail = StereoSetDetail.model_validate(res.detail)
    # one score triple per item row, the row's diff = stereotype - anti-stereotype
    assert [s.stimulus for s in detail.scores] == [x.stimulus for x in res.items]
    assert all(x.diff == s.stereotype - s.anti for s, x in zip(detail.scores, res.items, strict=True))
