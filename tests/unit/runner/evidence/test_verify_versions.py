"""A pack written before a metric record gained `detail` still verifies; a pack that
dropped any other field of a metric does not."""

from __future__ import annotations

from biasaudit.runner.evidence.recompute import decided
from biasaudit.runner.evidence.verify import _as_packed


def _metric(**extra: object) -> dict[str, object]:
    return {"name": "bias_score", "estimates": {"pct": {"value": 61.0}},
            "validity": [{"kind": "undefined", "message": "m"}], **extra}


def test_a_pack_without_detail_compares_equal_to_a_recomputation_with_it() -> None:
    packed = {"metrics": {"m": _metric()}}
    fresh = {"metrics": {"m": _metric(detail={"pairs": [1, 2]})}}
    assert decided(packed)["metrics"] != decided(fresh)["metrics"]
    assert decided(packed)["metrics"] == decided(_as_packed(packed, fresh))["metrics"]


def test_a_pack_with_detail_compares_it() -> None:
    packed = {"metrics": {"m": _metric(detail={"pairs": [1, 3]})}}
    fresh = {"metrics": {"m": _metric(detail={"pairs": [1, 2]})}}
    assert decided(packed)["metrics"] != decided(_as_packed(packed, fresh))["metrics"]


def test_a_pack_that_deleted_a_metric_field_does_not_compare_equal() -> None:
    # deleting the validity flags of a packed metric must not be read as "an older version"
    packed = {"metrics": {"m": {k: v for k, v in _metric().items() if k != "validity"}}}
    fresh = {"metrics": {"m": _metric(detail={})}}
    assert decided(packed)["metrics"] != decided(_as_packed(packed, fresh))["metrics"]
