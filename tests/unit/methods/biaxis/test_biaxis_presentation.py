"""BiAxisAudit's report section (`MetricDef.present`, issue 28): the eight kinds of tables
and plots it declares from the metric's records are those `compute` made itself before
(recorded in tests/fixtures/presentation), on the OAT and the fractional factorial spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.methods.biaxis.records import BiaxisDetail
from tests.unit.methods.presentation import check_case

CASES = [
    ("biaxis_oat_null", ["spec=biaxis_oat"], "null"),
    ("biaxis_oat_planted", ["spec=biaxis_oat"], "planted"),
    ("biaxis_oat_refuse", ["spec=biaxis_oat"], "refuse"),
    ("biaxis_factorial_null", ["spec=biaxis_factorial"], "null"),
]


@pytest.mark.parametrize(("case", "overrides", "kind"), CASES, ids=[c[0] for c in CASES])
def test_report_section_shows_what_compute_showed(case: str, overrides: list[str], kind: str, workdir: Path) -> None:
    check_case(case, overrides, kind, workdir)


def test_factorial_detail_holds_the_two_way_effects_and_the_interaction(workdir: Path) -> None:
    res = check_case("biaxis_factorial_null", ["spec=biaxis_factorial"], "null", workdir)["biaxis"]
    detail = BiaxisDetail.model_validate(res.detail)
    assert len(detail.cells) == res.counts["cells"]
    assert detail.two_way and detail.interaction is not None
    oat = BiaxisDetail.model_validate(check_case("biaxis_oat_null", ["spec=biaxis_oat"], "null", workdir)["biaxis"].detail)
    assert not oat.two_way and oat.interaction is None
