"""Group contrasts of M6 and M9 (issue 29, point 4), asked for with `contrasts: true`:
every pair of groups of a `by` field, Newcombe intervals (statsmodels' reference) in
percentage points, Holm across the pairs; off by default (no new estimates)."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import confint_proportions_2indep

from biasaudit.methods.nli_bias.metric import NLIBiasParams, compute
from biasaudit.report.presentation import present
from tests.unit.methods.nli_bias.test_nli_bias import _context

# M6: pE(stereo) > pE(counter). (0.6, .2, .2) vs (0.3, .4, .3) holds M6; the reverse does not.
HOLDS = ((0.6, 0.2, 0.2), (0.3, 0.4, 0.3))
FAILS = ((0.3, 0.4, 0.3), (0.6, 0.2, 0.2))


def test_m6_contrast_between_groups_equals_statsmodels_newcombe() -> None:
    # `_context` puts odd triples in group x and even ones in group y: 20 triples each.
    # x: M6 holds for 15 of 20 (odd i < 30); y: for 6 of 20 (even i < 12)
    triples = [HOLDS if (i % 2 and i < 30) or (i % 2 == 0 and i < 12) else FAILS for i in range(40)]
    ctx = _context(triples)
    off = compute(ctx, "nli_bias", NLIBiasParams(by=["cat"]))
    assert not any(k.startswith("contrast.") for k in off.estimates)
    p = NLIBiasParams(by=["cat"], contrasts=True)
    res = present(compute(ctx, "nli_bias", p), "nli_bias", p, ctx.config)
    assert res.estimates["M6.cat.x"].value == pytest.approx(75.0) and res.estimates["M6.cat.y"].value == pytest.approx(30.0)
    d = res.estimates["contrast.M6.cat.x-y"]
    lo, hi = confint_proportions_2indep(15, 20, 6, 20, method="newcomb", compare="diff")
    assert d.value == pytest.approx(45.0)
    assert (d.ci_low, d.ci_high) == (pytest.approx(100 * lo), pytest.approx(100 * hi))
    assert d.method == "newcombe-hybrid-score" and "Holm p" in d.note
    assert "contrast.M9.cat.x-y" in res.estimates
    titles = [t.title for t in res.tables]
    assert "Pairwise differences of M6 by cat" in titles and "Pairwise differences of M9 by cat" in titles
