"""The coding summary's agreement statistics, computed from integer columns (issue 42),
against references outside the project on random inputs: Cohen's kappa against
`sklearn.metrics.cohen_kappa_score` (exact: the same float operations), Fleiss' kappa
against statsmodels' `fleiss_kappa` on `aggregate_raters`' table (exact), and
Krippendorff's nominal alpha (with and without missing values, 2 to 5 raters) against the
textbook formula computed in exact rational arithmetic here (Krippendorff 2011,
"Computing Krippendorff's Alpha-Reliability": coincidences o_ck = sum over units of the
ordered pairs of values c, k from different raters, each weighted 1/(m_u - 1);
alpha = 1 - (n - 1) sum_{c != k} o_ck / sum_{c != k} n_c n_k). The `krippendorff`
package is not in the environment, hence the exact hand computation."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from biasaudit.coding.reliability import kappa_alpha, kappa_alpha_codes, panel_alpha, panel_report
from biasaudit.records.codes import Code
from biasaudit.stats.agreement import fleiss_kappa_patterns, kappa_of_confusion
from tests.coding_helpers import unit

CONFORMANCE = [
    {"check": "Cohen's kappa of two raters from per-stimulus confusion matrices (coding reliability pairs, "
              "judge pairs), 200 random label pairs, 2-6 labels",
     "source": "sklearn.metrics.cohen_kappa_score on the same labels", "tolerance": "exact (==)"},
    {"check": "Fleiss' kappa of a judge panel from vote patterns, 100 random full tables, 2-5 raters",
     "source": "statsmodels.stats.inter_rater.fleiss_kappa on aggregate_raters' table", "tolerance": "exact (==)"},
    {"check": "Krippendorff's nominal alpha of a reliability pair (two raters), 100 random inputs",
     "source": "textbook formula (Krippendorff 2011) in exact rational arithmetic", "tolerance": "1e-12"},
    {"check": "Krippendorff's nominal alpha of a panel with missing values, 2-5 raters, 100 random inputs, and "
              "the Krippendorff (2011) worked example",
     "source": "textbook formula (Krippendorff 2011) in exact rational arithmetic; published alpha 0.743",
     "tolerance": "1e-12; 5e-4 for the published value"},
]


def textbook_alpha(units: list[list[str | None]]) -> float | None:
    """Krippendorff's nominal alpha by its definition, in fractions (no numpy)."""
    o: dict[tuple[str, str], Fraction] = {}
    for u in units:
        values = [v for v in u if v is not None]
        m = len(values)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            key = (values[i], values[j])
            o[key] = o.get(key, Fraction(0)) + Fraction(1, m - 1)
    cats = sorted({c for c, _ in o})
    n_c = {c: sum((o.get((c, k), Fraction(0)) for k in cats), Fraction(0)) for c in cats}
    n = sum(n_c.values(), Fraction(0))
    disagree = sum((o.get((c, k), Fraction(0)) for c in cats for k in cats if c != k), Fraction(0))
    expected = sum((n_c[c] * n_c[k] for c in cats for k in cats if c != k), Fraction(0))
    if n <= 1 or expected == 0:
        return None
    return float(1 - (n - 1) * disagree / expected)


def _labels(rng: np.random.Generator, n: int, k: int) -> list[str]:
    return [chr(65 + int(i)) for i in rng.integers(0, k, n)]


def test_kappa_matches_sklearn_exactly() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        n, k = int(rng.integers(2, 300)), int(rng.integers(2, 7))
        a = _labels(rng, n, k)
        b = [x if rng.random() < 0.4 else y for x, y in zip(a, _labels(rng, n, k), strict=True)]
        if len(set(a) | set(b)) < 2:
            continue
        want = cohen_kappa_score(a, b)
        cats = sorted(set(a) | set(b))
        conf = np.zeros((len(cats), len(cats)), dtype=np.int64)
        for x, y in zip(a, b, strict=True):
            conf[cats.index(x), cats.index(y)] += 1
        assert kappa_of_confusion(conf) == want
        ranks = {c: i for i, c in enumerate(cats)}
        k_est, _ = kappa_alpha_codes(np.array([ranks[x] for x in a]), np.array([ranks[y] for y in b]),
                                     rng.integers(0, 20, n))
        assert k_est.value == want
        k_str, _ = kappa_alpha(a, b, [f"s{i % 7}" for i in range(n)])
        assert k_str.value == want


def test_kappa_of_one_label_is_undefined() -> None:
    assert kappa_of_confusion(np.array([[5, 0], [0, 0]])) is None
    k, al = kappa_alpha_codes(np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64), np.arange(4))
    assert k.value is None and al.value is None and "undefined" in (k.note or "")


def test_fleiss_matches_statsmodels_exactly() -> None:
    rng = np.random.default_rng(11)
    for _ in range(100):
        raters, k, n = int(rng.integers(2, 6)), int(rng.integers(2, 5)), int(rng.integers(2, 400))
        rows = rng.integers(0, k, (n, raters))
        table, _ = aggregate_raters(rows, n_cat=k)
        table = table[:, table.sum(axis=0) > 0]  # the labels present, as `stats.fleiss_kappa` builds it
        if table.shape[1] < 2:
            continue
        want = sm_fleiss(table, method="fleiss")
        patterns, of_row = np.unique(table, axis=0, return_inverse=True)
        assert fleiss_kappa_patterns(patterns, of_row.ravel()) == want


def test_pair_alpha_matches_the_textbook_formula() -> None:
    rng = np.random.default_rng(3)
    for _ in range(100):
        n, k = int(rng.integers(2, 200)), int(rng.integers(2, 6))
        a = _labels(rng, n, k)
        b = [x if rng.random() < 0.5 else y for x, y in zip(a, _labels(rng, n, k), strict=True)]
        _, al = kappa_alpha(a, b, [f"s{i % 9}" for i in range(n)])
        want = textbook_alpha([[x, y] for x, y in zip(a, b, strict=True)])
        if want is None:
            assert al.value is None
        else:
            assert al.value == pytest.approx(want, abs=1e-12)


def test_panel_alpha_with_missing_values_matches_the_textbook_formula() -> None:
    rng = np.random.default_rng(5)
    for _ in range(100):
        n, k, raters = int(rng.integers(2, 150)), int(rng.integers(2, 6)), int(rng.integers(2, 6))
        units: list[list[str | None]] = [[chr(65 + int(rng.integers(0, k))) if rng.random() < 0.75 else None
                                          for _ in range(raters)] for _ in range(n)]
        e = panel_alpha(units, [f"s{i % 13}" for i in range(n)])
        want = textbook_alpha(units)
        if want is None:
            assert e.value is None
        else:
            assert e.value == pytest.approx(want, abs=1e-12)
            assert e.n == sum(1 for u in units if sum(v is not None for v in u) >= 2)


def test_panel_alpha_published_example() -> None:
    # Krippendorff (2011), nominal data, 4 observers x 12 units with missing values: alpha = 0.743
    n = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    units = [[None if v is None else str(v) for v in u] for u in zip(*coders, strict=True)]
    e = panel_alpha(units, [f"u{i}" for i in range(12)])
    assert e.value == pytest.approx(0.743, abs=5e-4)
    assert e.value == pytest.approx(textbook_alpha(units), abs=1e-12)


def test_panel_report_matches_the_references() -> None:
    rng = np.random.default_rng(9)
    judges = "wxyz"
    shapes = [{j: (str(rng.choice(["E", "N", "D"])) if rng.random() < 0.8 else None) for j in judges}
              for _ in range(12)]
    units = [unit(i, stimulus=f"s{i % 17}") for i in range(600)]
    votes = [shapes[int(rng.integers(0, len(shapes)))] for _ in units]
    codes = {u.id: Code(unit=u.id, status="coded", detail={"votes": v}) for u, v in zip(units, votes, strict=True)}
    rep = panel_report("elab", units, codes)
    assert rep is not None and rep.judges == list(judges)
    for a, b, n, agree, kappa in rep.pairwise:
        both = [(v[str(a)], v[str(b)]) for v in votes if v[str(a)] is not None and v[str(b)] is not None]
        assert n == len(both) and agree == sum(x == y for x, y in both) / len(both)
        assert kappa == cohen_kappa_score([x for x, _ in both], [y for _, y in both])
    full = [[v[j] for j in judges] for v in votes if all(v[j] is not None for j in judges)]
    cats = sorted({x for r in full for x in r})
    table, _ = aggregate_raters(np.array([[cats.index(x) for x in r] for r in full]), n_cat=len(cats))
    assert rep.n == len(full) and rep.fleiss == sm_fleiss(table, method="fleiss")
    assert rep.alpha.value == pytest.approx(textbook_alpha([[v[j] for j in judges] for v in votes]), abs=1e-12)
