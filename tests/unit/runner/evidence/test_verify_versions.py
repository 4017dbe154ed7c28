"""`biasaudit verify` compares the packed summary upgraded to today's layout with the
re-computed one as the packed file's version recorded it (records/upgrade/summary.py,
`UNRECORDED` and `as_recorded`): a format-1 pack written before metrics kept `detail`
still verifies; a pack that dropped any other field of a metric, or a format-2 pack that
dropped `detail`, does not."""

from __future__ import annotations

from biasaudit.records.json import JSONObject
from biasaudit.records.upgrade import upgrade
from biasaudit.records.upgrade.summary import as_recorded
from biasaudit.runner.evidence.recompute import decided


def _metric(**extra: object) -> JSONObject:
    out: JSONObject = {"name": "bias_score", "estimates": {"pct": {"value": 61.0}},
                       "validity": [{"kind": "undefined", "message": "m"}]}
    out.update(extra)  # type: ignore[arg-type]
    return out


def _compared(packed: JSONObject, fresh: JSONObject) -> tuple[str, str]:
    # as verify does: the packed summary upgraded, both as the packed version recorded them
    written, read = upgrade("summary", packed)
    return (decided(as_recorded(written, packed, read))["metrics"],
            decided(as_recorded(fresh, packed, read))["metrics"])


def test_a_format_1_pack_without_detail_compares_equal_to_a_recomputation_with_it() -> None:
    packed: JSONObject = {"metrics": {"m": _metric()}}
    fresh: JSONObject = {"format_version": 2, "metrics": {"m": _metric(detail={"pairs": [1, 2]})}}
    assert decided(packed)["metrics"] != decided(fresh)["metrics"]
    a, b = _compared(packed, fresh)
    assert a == b


def test_a_pack_with_detail_compares_it() -> None:
    packed: JSONObject = {"metrics": {"m": _metric(detail={"pairs": [1, 3]})}}
    fresh: JSONObject = {"format_version": 2, "metrics": {"m": _metric(detail={"pairs": [1, 2]})}}
    a, b = _compared(packed, fresh)
    assert a != b


def test_a_format_2_pack_without_detail_does_not_compare_equal() -> None:
    # format 2 always records detail: its absence is an edit, not an older version
    packed: JSONObject = {"format_version": 2, "metrics": {"m": _metric()}}
    fresh: JSONObject = {"format_version": 2, "metrics": {"m": _metric(detail={"pairs": [1, 2]})}}
    a, b = _compared(packed, fresh)
    assert a != b


def test_a_pack_that_deleted_a_metric_field_does_not_compare_equal() -> None:
    # deleting the validity flags of a packed metric must not be read as "an older version"
    packed: JSONObject = {"metrics": {"m": {k: v for k, v in _metric().items() if k != "validity"}}}
    fresh: JSONObject = {"format_version": 2, "metrics": {"m": _metric(detail={})}}
    a, b = _compared(packed, fresh)
    assert a != b


def test_groups_are_compared_where_the_pack_s_version_recorded_them() -> None:
    # format 1 kept no typed group (its upgrade gives the one the name says, without the
    # reference format 1 never said): not compared; format 2 records it: compared
    est = {"value": 0.5}
    group = {"factor": "gender", "levels": ["woman"], "reference": "man"}

    def summary(g: object, **top: object) -> JSONObject:
        e = {**est, "group": g} if g is not None else est
        out: JSONObject = {"metrics": {"m": _metric(params={"by": ["gender"]}, estimates={"rate.gender.woman": e},
                                                    detail={})}}
        out.update(top)  # type: ignore[arg-type]
        return out

    fresh = summary(group, format_version=2)
    assert _compared(summary(None), fresh)[0] == _compared(summary(None), fresh)[1]
    wrong = {**group, "levels": ["man"]}
    a, b = _compared(summary(wrong, format_version=2), fresh)
    assert a != b
    a, b = _compared(summary(group, format_version=2), fresh)
    assert a == b
