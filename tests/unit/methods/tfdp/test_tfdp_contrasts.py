"""TFDP's scores compared between the groups of the task field and the `by` fields (issue
29, point 4; `contrasts: true`): difference of means with Welch's interval and test (scipy
`ttest_ind(equal_var=False)`), Holm across the pairs (statsmodels `multipletests`)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.multitest import multipletests

from biasaudit.methods.tfdp.metric import PairScores, TFDPParams, _summarise
from biasaudit.records.metric_result import ItemRow
from biasaudit.report.presentation import present
from tests.unit.methods.tfdp.test_tfdp_present import context


def _pair(i: int, cat: str, ps: float) -> PairScores:
    return PairScores(stimulus=f"s{i}", fields={"category": cat, "task": "fill"}, abar=0.5, abar_counter=0.5, ps=ps,
                      psd=abs(ps) / 2, wfs=ps / 2, ill_formed=0, predictions=2, top="a", top_counter="b")


def test_ps_contrasts_equal_welch_and_holm() -> None:
    rng = np.random.default_rng(5)
    ps = {"home": rng.normal(0.3, 0.2, 12), "power": rng.normal(0.0, 0.3, 9), "work": rng.normal(0.1, 0.1, 15)}
    pairs = [_pair(i, cat, float(v)) for cat, vs in ps.items() for i, v in enumerate(vs, start=100 * len(cat))]
    ctx = SimpleNamespace(plan=SimpleNamespace(kind="generate"), item=lambda s, *a, **k: ItemRow(stimulus=s))
    p = TFDPParams(by=["category"], contrasts=True)
    res = _summarise(ctx, "tfdp", p, pairs, [], 0, 2 * len(pairs), 1)  # type: ignore[arg-type]
    est = res.estimates
    names = [("home", "power"), ("home", "work"), ("power", "work")]
    refs = [st.ttest_ind(ps[a], ps[b], equal_var=False) for a, b in names]
    _, holm, _, _ = multipletests([r.pvalue for r in refs], method="holm")
    for (a, b), ref, q in zip(names, refs, holm, strict=True):
        d = est[f"contrast.PS.category.{a}-{b}"]
        lo, hi = ref.confidence_interval(0.95)
        assert d.value == pytest.approx(ps[a].mean() - ps[b].mean())
        assert (d.ci_low, d.ci_high) == (pytest.approx(lo), pytest.approx(hi))
        assert d.method == "welch-t" and f"Holm p = {q:.4g}" in d.note
    assert "contrast.WFS.category.home-power" in est and "contrast.abs_PS.category.home-work" in est
    shown = present(res, "tfdp", p, context("generate").config)
    assert any(t.title == "Pairwise differences of mean PS by category" for t in shown.tables)
    off = _summarise(ctx, "tfdp", TFDPParams(by=["category"]), pairs, [], 0, 2 * len(pairs), 1)  # type: ignore[arg-type]
    assert not any(k.startswith("contrast.") for k in off.estimates)
