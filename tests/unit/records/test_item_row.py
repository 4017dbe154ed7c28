"""`ItemRow`: the typed item record keeps summary.json's flat row, key order included
(items.csv's columns follow it), and reads such a row back into the same record."""

from __future__ import annotations

import json

import numpy as np

from biasaudit.metrics.base import item_row, stimulus_sha
from biasaudit.records.metric_result import ItemRow, MetricResult


def test_flat_row_as_summary_json_had_it() -> None:
    fields = {"more": "He cried.", "less": "She cried.", "bias_type": "gender", "n": 3, "flag": True,
              "nested": {"x": 1}, "diff": "a stimulus field may not take over the item's number"}
    r = item_row("s1", "frame=a", {"frame": "a"}, fields, outcome=1, diff=-0.25)
    flat = r.model_dump(mode="json")
    # the order of the dict the metric used to build: where, hash, scalar fields, numbers
    assert list(flat) == ["stimulus", "cell", "levels", "stimulus_sha", "more", "less", "bias_type", "n", "flag",
                          "outcome", "diff"]
    assert flat["stimulus_sha"] == stimulus_sha(fields)
    assert flat["flag"] is True and flat["n"] == 3 and flat["outcome"] == 1 and flat["diff"] == -0.25
    assert (r.outcome, r.diff, r.fields["bias_type"]) == (1, -0.25, "gender")


def test_given_none_stays_null_and_absent_stays_absent() -> None:
    # a FiSCo row whose t is undefined writes "diff": null; a label-rate row has no diff
    assert item_row("s", "base", {}, {"q": "x"}, outcome=0, diff=None).model_dump()["diff"] is None
    assert "diff" not in item_row("s", "base", {}, {"q": "x"}, outcome=0).model_dump()
    assert "outcome" not in item_row("s", "base", {}, {"q": "x"}, diff=1.5).model_dump()


def test_other_numbers_follow_diff_and_read_back_as_numbers() -> None:
    r = item_row("s", "c", {}, {"sentence": "a"}, sha="abc", diff=0.5, accurate=1)
    flat = r.model_dump(mode="json")
    assert list(flat)[-2:] == ["diff", "accurate"] and flat["stimulus_sha"] == "abc"
    back = ItemRow.model_validate(json.loads(json.dumps(flat)))
    assert back == r and back.values == {"accurate": 1} and back.fields == {"sentence": "a"}
    assert back.value("accurate") == 1 and back.value("diff") == 0.5 and back.value("outcome") is None


def test_items_outside_the_cells_have_no_cell_keys() -> None:
    r = ItemRow(stimulus="st1", fields={"target": "nurse", "bias_type": "gender", "split": "intra"}, diff=2)
    assert r.model_dump(mode="json") == {"stimulus": "st1", "target": "nurse", "bias_type": "gender",
                                         "split": "intra", "diff": 2}
    assert isinstance(r.model_dump()["diff"], int)  # an int stays 2, not 2.0


def test_numpy_numbers_become_plain_json_numbers() -> None:
    r = item_row("s", "c", {}, {}, outcome=int(np.int64(1)), diff=np.float64(0.125))
    assert json.dumps(r.model_dump(mode="json")).endswith('"outcome": 1, "diff": 0.125}')


def test_metric_result_reads_summary_rows() -> None:
    rows = [{"stimulus": "0", "cell": "base", "levels": {}, "stimulus_sha": "h0", "text": "t", "outcome": 1},
            {"stimulus": "1", "cell": "base", "levels": {}, "text": "u", "outcome": 0}]
    m = MetricResult.model_validate({"name": "x", "headline": "rate", "estimates": {}, "items": rows})
    assert [i.outcome for i in m.items] == [1, 0] and m.items[1].stimulus_sha is None
    assert m.model_dump(mode="json")["items"] == rows
