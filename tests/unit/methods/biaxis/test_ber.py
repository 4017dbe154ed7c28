"""BER family (docs/methods/biaxis.md checks): identities, the paper's DeepSeek-V3
decomposition, Proposition 2, Wilson intervals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from statsmodels.stats.proportion import proportion_confint

from biasaudit.methods.biaxis.ber import ber_estimates, ber_family, cancellation_trap, indicators


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.tuples(hs.booleans(), hs.booleans()), min_size=1, max_size=200))
def test_identities_on_random_indicators(rows: list[tuple[bool, bool]]) -> None:
    a = np.array([x for x, _ in rows], dtype=float)
    b = np.array([y for _, y in rows], dtype=float)
    r = ber_family(a, b)
    assert r["union"] == pytest.approx(r["sel"] + r["elab"] - r["cor"])
    assert r["union"] - r["sel"] == pytest.approx(r["ued"])
    assert r["union"] - r["elab"] == pytest.approx(r["oed"])
    assert r["dni"] == pytest.approx(r["oed"] - r["ued"])
    assert r["ir"] == pytest.approx(r["oed"] + r["ued"])
    assert r["cor"] <= min(r["sel"], r["elab"]) + 1e-12
    assert max(r["sel"], r["elab"]) <= r["union"] + 1e-12


def rows_with(n: int, both: int, sel_only: int, elab_only: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([1] * both + [1] * sel_only + [0] * elab_only + [0] * (n - both - sel_only - elab_only), dtype=float)
    b = np.array([1] * both + [0] * sel_only + [1] * elab_only + [0] * (n - both - sel_only - elab_only), dtype=float)
    return a, b


def test_deepseek_v3_decomposition() -> None:
    # BER_cor .172, BER_sel .377, BER_elab .248 on 1000 rows: 172 both, 205 sel only, 76 elab only
    a, b = rows_with(1000, 172, 377 - 172, 248 - 172)
    r = ber_family(a, b)
    assert (r["cor"], r["sel"], r["elab"]) == pytest.approx((0.172, 0.377, 0.248))
    assert r["union"] == pytest.approx(0.453)
    assert r["ir"] == pytest.approx(0.281)  # the paper rounds to 0.282
    assert r["dni"] == pytest.approx(0.129)
    assert r["ir_over_union"] == pytest.approx(0.281 / 0.453)


def test_proposition_2_cancellation_trap() -> None:
    # equal mismatch frequencies c in both directions: DNI = 0 while IR = 2c > 0
    c = 0.08
    a, b = rows_with(1000, 200, int(c * 1000), int(c * 1000))
    r = ber_family(a, b)
    assert r["dni"] == pytest.approx(0.0) and r["ir"] == pytest.approx(2 * c)
    assert r["sel"] == pytest.approx(r["elab"]) and r["sel"] - r["cor"] == pytest.approx(c)
    assert cancellation_trap(r["ir"], r["dni"])
    assert not cancellation_trap(0.05, 0.0)  # little disagreement: reliable, not a trap
    assert not cancellation_trap(0.28, 0.129)  # disagreement with a direction


def test_wilson_per_cell_equals_statsmodels() -> None:
    a, b = rows_with(50, 10, 7, 3)
    est = ber_estimates(a, b)
    lo, hi = proportion_confint(17, 50, method="wilson")
    assert (est["sel"].ci_low, est["sel"].ci_high) == pytest.approx((lo, hi))
    assert est["union"].value == pytest.approx(20 / 50)


def test_indicators_and_eligibility() -> None:
    a, b, ok = indicators(["E", "D", None, "Abstain", "N"], ["D", "QE", "E", "E", "Abstain"])
    assert a.tolist() == [1, 0, 0, 0, 0] and b.tolist() == [0, 1, 1, 1, 0]
    assert ok.tolist() == [True, True, True, False, False]  # no selection layer still counts (A = 0)


def test_pooled_cluster_bootstrap_over_statements() -> None:
    a, b = rows_with(60, 12, 9, 6)
    statements = np.repeat(np.arange(12), 5)
    est = ber_estimates(a, b, clusters=statements, seed=1)
    assert est["union"].value == pytest.approx(27 / 60) and est["union"].method.startswith("cluster-bootstrap")
    assert est["union"].ci_low < est["union"].value < est["union"].ci_high
