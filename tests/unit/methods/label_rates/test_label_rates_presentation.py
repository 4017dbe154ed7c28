"""The report sections of `label_rate` and `impact_ratio` (`MetricDef.present`, issue 28):
the tables and plots they declare from the metrics' records are those `compute` made
itself before (recorded in tests/fixtures/presentation)."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.methods.label_rates.records import ImpactDetail, LabelRateDetail
from tests.unit.methods.presentation import check_case

CASES = [
    ("hiring_impact_null", ["spec=hiring_impact"], "null"),
    ("hiring_impact_planted", ["spec=hiring_impact"], "planted"),
    ("hiring_impact_refuse", ["spec=hiring_impact"], "refuse"),
    ("refusal_stance_null", ["spec=refusal_stance"], "null"),
]


@pytest.mark.parametrize(("case", "overrides", "kind"), CASES, ids=[c[0] for c in CASES])
def test_report_section_shows_what_compute_showed(case: str, overrides: list[str], kind: str, workdir: Path) -> None:
    check_case(case, overrides, kind, workdir)


def test_label_counts_and_families_are_in_the_detail(workdir: Path) -> None:
    results = check_case("hiring_impact_null", ["spec=hiring_impact"], "null", workdir)
    rate = LabelRateDetail.model_validate(results["invite_rate"].detail)
    # per cell, the coded units are those counted under a label
    assert sum(c.coded for c in rate.cells.values()) == results["invite_rate"].counts["coded"]
    assert [b.field for b in rate.breakdowns] == ["gender", "race"]
    impact = ImpactDetail.model_validate(results["impact"].detail)
    assert [f.key for f in impact.families] == ["gender", "race", "gender+race"]
