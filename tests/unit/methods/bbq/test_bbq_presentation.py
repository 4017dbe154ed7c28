"""BBQ's report section (`MetricDef.present`, issue 28): the tables and plots it declares
from the metric's records are those `compute` made itself before (recorded in
tests/fixtures/presentation): scored and generated answers, a refusing model, and the
category contrasts."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasaudit.methods.bbq.records import BBQDetail
from tests.unit.methods.presentation import check_case

SAMPLE = ["stimuli.source=data/bbq_sample.jsonl", "stimuli.sample=null"]
"""The team-written sample the recorded tables are of (the shipped specs read a seeded
sample of the published Age file)."""
CASES = [
    ("bbq_null", ["spec=bbq", *SAMPLE], "null"),
    ("bbq_refuse", ["spec=bbq", *SAMPLE], "refuse"),
    ("bbq_contrasts_planted", ["spec=bbq", *SAMPLE, "+metrics.0.contrasts=true"], "planted"),
    ("bbq_generate_null", ["spec=bbq_generate", *SAMPLE], "null"),
    ("bbq_generate_refuse", ["spec=bbq_generate", *SAMPLE], "refuse"),
]


@pytest.mark.parametrize(("case", "overrides", "kind"), CASES, ids=[c[0] for c in CASES])
def test_report_section_shows_what_compute_showed(case: str, overrides: list[str], kind: str, workdir: Path) -> None:
    check_case(case, overrides, kind, workdir)


def test_outcomes_are_counted_per_category_in_the_detail(workdir: Path) -> None:
    res = check_case("bbq_generate_refuse", ["spec=bbq_generate", *SAMPLE], "refuse", workdir)["bbq"]
    detail = BBQDetail.model_validate(res.detail)
    # every answer refused: none valid, each category's answers all under "refused"
    assert sum(o.answers for o in detail.outcomes) == res.counts["answers"]
    assert all(o.valid == 0 and o.invalid == {"refused": o.answers} for o in detail.outcomes)
