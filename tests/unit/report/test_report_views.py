"""The report's views are built at render time from the typed RunSummary
(report/sections.py): hand-built summaries, hand-computed figures, statsmodels'
Wilson interval, and the layout summary.json has always had."""

from __future__ import annotations

import json

import pytest
from statsmodels.stats.proportion import proportion_confint

from biasaudit.records.estimate import Estimate, Spread
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.summary import RunSummary
from biasaudit.report import sections

LAYOUT = ["format_version", "audit", "run_id", "model", "spec_sha256", "data", "generated", "cover", "executive",
          "method", "design", "execution", "metrics", "coding", "conditions", "reliability", "quality", "verdicts", "validity",
          "overall", "measured", "unmeasured_reason", "reproducibility", "trail", "answers", "sequential", "budget"]


def _e(v: float | None, n: int = 10) -> Estimate:
    return Estimate(value=v, ci_low=None if v is None else v - 0.1, ci_high=None if v is None else v + 0.1, n=n,
                    method="wilson")


def _summary() -> RunSummary:
    cells = {"f=a": _e(0.7), "f=b": _e(0.2), "f=c": _e(None, 0)}
    metric = MetricResult(
        id="rate", name="label_rate", headline="rate", estimates={"rate": _e(0.45, 30)}, cells={"rate": cells},
        spread={"rate": Spread(range=_e(0.5), eta2=0.3, n_cells=2, min_cell="f=b", max_cell="f=a")},
        reference=0.0, counts={"coded": 28, "failed": 2},
        validity=[{"kind": "undefined", "message": "cell f=c has no data", "estimates": ["rate"]}])
    verdict = {"metric": "rate", "over": "pooled", "min": None, "max": 0.5, "estimate": _e(0.45, 30).model_dump(),
               "verdict": "PASS", "refs": ["EU-AI-Act:10"], "reason": "within bounds"}
    sanity = {**verdict, "metric": "sanity", "verdict": "FAIL", "sanity": True, "note": "spec note"}
    return RunSummary.model_validate({
        "audit": {"name": "a"}, "model": {"name": "m1"}, "data": {"rows": 10, "used": 8},
        "design": {"cells": list(cells), "n_cells": 3, "levels": {c: {"f": c[2:]} for c in cells},
                   "factors": {"f": ["a", "b", "c"]}, "probe": "generate", "kind": "full",
                   "metric_names": {"rate": "label_rate"}},
        "execution": {"requests": 20, "failures": 3}, "metrics": {"rate": metric.model_dump(mode="json")},
        "verdicts": [verdict, sanity], "overall": "FAIL"})


def test_executive_counts_verdicts_and_names_the_model_in_sanity_statements() -> None:
    ex = sections.executive(_summary())
    assert ex["text"] == "2 threshold(s) checked: 1 PASS, 1 FAIL, 0 INCONCLUSIVE."
    assert (ex["pass"], ex["fail"], ex["inconclusive"], ex["n_thresholds"]) == (1, 1, 0, 2)
    [s] = ex["sanity"]
    assert s["text"].startswith("m1: The sanity check failed") and s["note"] == "spec note"
    assert ex["headlines"][0]["estimate"]["value"] == 0.45


def test_unmeasured_run_says_so_first() -> None:
    s = _summary().model_copy(update={"unmeasured_reason": "18 of 20 requests failed"})
    assert sections.executive(s)["text"].startswith("The run could not measure: 18 of 20 requests failed. 2 ")


def test_failed_requests_row_is_wilsons_interval() -> None:
    [row] = [r for r in sections.reliability(_summary()) if r["metric"] == "execution"]
    lo, hi = proportion_confint(3, 20, alpha=0.05, method="wilson")
    assert row["estimate"]["value"] == pytest.approx(0.15)
    assert (row["estimate"]["ci_low"], row["estimate"]["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))


def test_conditions_sort_cells_by_value_with_their_levels() -> None:
    [sp] = sections.conditions(_summary())["spreads"]
    assert [c["cell"] for c in sp["cells"]] == ["f=b", "f=a", "f=c"]  # no data last
    assert sp["cells"][1]["levels"] == {"f": "a"} and sp["range"]["value"] == 0.5 and sp["eta2"] == 0.3
    assert sp["plot"]["labels"] == ["f=b", "f=a", "f=c"] and "the line marks 0" in sp["plot"]["alt"]


def test_quality_method_and_verdict_rows() -> None:
    s = _summary()
    assert sections.quality(s) == {"data_rows": 10, "data_used": 8, "data_left_out": 2,
                                   "metric_counts": {"rate": {"coded": 28, "failed": 2}}}
    m = sections.method(s)
    assert (m["probe"], m["design"], m["n_cells"], m["stimuli"], m["stimuli_total"]) == ("generate", "full", 3, 8, 10)
    assert m["metrics"][0]["metric_keys"] == ["rate"]
    v = sections.verdict_rows(s.verdicts, None)[0]
    assert v["over_text"] == "pooled over all cells" and len(v["clauses"]) == 1
    assert [f["metric"] for f in sections.validity(s)] == ["rate"]


def test_document_has_the_summary_json_layout_and_reads_back_to_itself() -> None:
    doc = sections.document(_summary(), None)
    assert list(doc) == LAYOUT
    back = RunSummary.model_validate(json.loads(json.dumps(doc)))
    assert sections.document(back, None) == json.loads(json.dumps(doc))


def test_an_older_summary_takes_its_design_from_its_views() -> None:
    doc = json.loads(json.dumps(sections.document(_summary(), None)))
    for k in ("levels", "factors", "probe", "kind", "metric_names"):
        doc["design"].pop(k)  # as written before the design carried them (format 1)
    doc.pop("format_version")
    old = RunSummary.read_raw(doc, file="summary.json")  # read through records/upgrade/summary.py
    assert (old.design.probe, old.design.kind, old.design.factors) == ("generate", "full", {"f": ["a", "b", "c"]})
    assert old.design.levels == {"f=a": {"f": "a"}, "f=b": {"f": "b"}, "f=c": {"f": "c"}}
    assert sections.conditions(old) == doc["conditions"] and sections.method(old) == doc["method"]


def test_a_summary_read_back_leaves_the_views_out() -> None:
    built = _summary()
    doc = json.loads(json.dumps(sections.document(built, None)))
    assert doc["verdicts"][0]["over_text"] and doc["executive"]["n_thresholds"] == 2
    back = RunSummary.model_validate(doc)
    assert back == built and back.model_extra is None and back.verdicts[0].model_extra is None  # refused, not kept
