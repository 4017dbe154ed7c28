"""Pivotal perplexity: accuracy compared between the groups of a `by` field (issue 29,
point 4; `contrasts: true`), rows clustered by stimulus; a group whose every pair ties has
no accuracy and no contrast."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from statsmodels.stats.proportion import confint_proportions_2indep

from biasaudit.methods.pivotal_perplexity.metric import (
    CLASSES,
    PairResult,
    PivotalParams,
    _summarise,
)
from biasaudit.records.metric_result import ItemRow

N = {c: 0.3 for c in CLASSES}


def _ctx() -> SimpleNamespace:
    return SimpleNamespace(plan=SimpleNamespace(cells=[SimpleNamespace(id="base")]),
                           item=lambda s, *a, **k: ItemRow(stimulus=s))


def _pair(i: int, cat: str, accurate: bool, tied: bool = False) -> PairResult:
    return PairResult(stimulus=f"s{i}", cell="base", fields={"category": cat}, accurate=accurate,
                      normalized=dict(N), plain=dict(N), tied=tied)


def test_accuracy_contrasts_by_hand() -> None:
    # agreement: 18 of 20 accurate; tense: 11 of 20; ties: every pair tied (accuracy undefined)
    rs = ([_pair(i, "agreement", i < 18) for i in range(20)] + [_pair(100 + i, "tense", i < 11) for i in range(20)]
          + [_pair(200 + i, "ties", False, tied=True) for i in range(6)])
    res = _summarise(_ctx(), "pv", PivotalParams(by=["category"], contrasts=True), rs, [])  # type: ignore[arg-type]
    est = res.estimates
    d = est["contrast.accuracy.category.agreement-tense"]
    lo, hi = confint_proportions_2indep(18, 20, 11, 20, method="newcomb", compare="diff")
    assert d.value == pytest.approx(0.35) and (d.ci_low, d.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert est["accuracy.category.ties"].value is None
    bad = est["contrast.accuracy.category.agreement-ties"]
    assert bad.value is None and "group ties" in bad.note and bad.note.startswith("undefined")
    off = _summarise(_ctx(), "pv", PivotalParams(by=["category"]), rs, [])  # type: ignore[arg-type]
    assert not any(k.startswith("contrast.") for k in off.estimates)
