"""The self-test's rows that read the content (issue 37, section 3): no-bias values and
parity bands, the level -> group table, the label-word decision, the content oracles'
side finding."""

from __future__ import annotations

from typing import Any

import pytest

from biasaudit.methods.oracle_kit import found_in
from biasaudit.plan import Request
from biasaudit.records.responses import Response


def test_found_in_takes_the_longest_sentence_the_request_carries() -> None:
    more, less = "Women are too emotional to lead.", "Men are too emotional to lead."
    assert found_in(f"Judge this: {less}", {"stereo": more, "other": less}) == "other"
    assert found_in(more, {"stereo": more, "other": less}) == "stereo"
    assert found_in("something else", {"stereo": more, "other": less}) is None


def test_every_metric_with_a_parity_threshold_in_a_shipped_spec_declares_its_no_bias_value() -> None:
    from biasaudit.runner.pipeline import prepare
    from biasaudit.runner.selftest_content import estimate_no_bias
    from biasaudit.spec.compose import compose
    from tests.helpers import REPO

    checked = 0
    for path in sorted((REPO / "specs").glob("*.yaml")):
        if path.stem in ("default_suite", "biaxis_factorial", "biaxis_oat", "refusal_stance"):
            continue
        prep = prepare(compose([f"spec={path.stem}", "model=scripted", "model.backend=oracle", "~model.script"]))
        for t in prep.composed.config.thresholds:
            if t.min is not None and t.max is not None and not t.sanity:
                nb = estimate_no_bias(prep, t.metric)
                assert nb is not None, (path.stem, t.metric)
                assert t.min <= nb.value <= t.max
                checked += 1
    assert checked >= 8


def test_validate_prints_the_level_to_group_table(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("validate", "spec=fisco_gender", "factors.person.sarah.vars.group=male")
    assert code == 0
    assert "groups of factor person (level: group): emily: female, sarah: male, maria: female, john: male" in out


def test_the_report_method_section_lists_the_groups() -> None:
    from biasaudit.records.summary import DataInfo, DesignInfo, RunSummary
    from biasaudit.report.sections import method

    s = RunSummary.model_construct(metrics={}, design=DesignInfo(groups={"person": {"sarah": "male"}}),
                                   data=DataInfo(used=1, rows=1))
    assert method(s)["groups"] == {"person": {"sarah": "male"}}


class _NLI:
    """An NLI backend that answers each sanity case by a fixed margin per kind of pair."""

    def __init__(self, entailed: float, contradicted: float) -> None:
        self.m = {"entailed": entailed, "contradicted": contradicted}

    def execute(self, requests: list[Request], emit: Any) -> None:
        for r in requests:
            d = self.m["entailed" if "entailed" in r.key else "contradicted"]
            e = (1 + d) / 3
            emit(Response(key=r.key, status="ok", output={"probs": {"entailment": e, "contradiction": e - d,
                                                                    "neutral": 1 - 2 * e + d}}))


@pytest.mark.parametrize(("ent", "con", "got", "problem"), [
    (0.4, 0.1, "PASS", False), (0.1, 0.4, "FAIL", True), (0.2, 0.18, "INCONCLUSIVE", False)])
def test_label_word_row_decides_by_the_order_of_the_margins(monkeypatch: pytest.MonkeyPatch, ent: float, con: float,
                                                             got: str, problem: bool) -> None:
    import biasaudit.backends as backends
    from biasaudit.runner.selftest_words import nli_word_rows
    from biasaudit.spec.compose import compose

    monkeypatch.setattr(backends, "build_nli_backend", lambda cfg: _NLI(ent, con))
    cfg = compose(["spec=winoqueer_nli", "nli.labels.entailment=No", "nli.labels.contradiction=Yes"]).config
    rows, problems = nli_word_rows(cfg)
    assert [r.got for r in rows] == [got]
    assert bool(problems) == problem
    if problem:
        assert "entailment: 'No'" in problems[0] and "contradiction: 'Yes'" in problems[0]


