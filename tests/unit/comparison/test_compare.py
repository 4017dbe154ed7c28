"""`biasaudit compare` on synthetic run folders: fits against scipy.stats.linregress."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st

from biasaudit.comparison.runs import compare
from biasaudit.methods.nli_bias.metric import CONDITIONS


def est(v: float) -> dict:
    return {"value": v, "ci_low": v - 1, "ci_high": v + 1, "n": 10, "method": "wilson", "level": 0.95, "note": "", "groups": {}}


def write_run(folder: Path, subject: str, metrics: dict) -> None:
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({
        "audit": {"name": folder.name}, "model": {"name": subject}, "overall": "PASS", "metrics": metrics}))


def test_tp_vs_nli_fits_match_linregress(tmp_path: Path) -> None:
    tp = {"a": 40.0, "b": 55.0, "c": 70.0, "d": 52.0}
    m6 = {"a": 45.0, "b": 50.0, "c": 66.0, "d": 49.0}
    for i, s in enumerate(tp):
        write_run(tmp_path / f"{i}-tp", s, {"bias_score": {"name": "bias_score", "headline": "score",
                                                             "estimates": {"score": est(tp[s])},
                                                             "items": [{"stimulus": "1", "group": "g" + str(i % 2), "diff": tp[s] / 10}]}})
        ests = {k: est(m6[s] + j) for j, k in enumerate(CONDITIONS)}
        ests["M6"] = est(m6[s])
        write_run(tmp_path / f"{i}-nli", s, {"nli_bias": {"name": "nli_bias", "headline": "M6", "estimates": ests,
                                                           "items": [{"stimulus": "1", "identity": "x" if i % 2 else "y", "diff": m6[s]}]}})
    c = compare([tmp_path])
    t = c.analyses["nli_bias"].data
    assert t["subjects"] == ["a", "b", "c", "d"] and len(c.side_by_side.rows) == 8
    fit = next(f for f in t["fits"] if f[0].startswith("M6"))
    ref = st.linregress([tp[s] for s in "abcd"], [m6[s] for s in "abcd"])
    assert fit[1] == pytest.approx(ref.rvalue**2) and fit[3] == pytest.approx(ref.pvalue)
    labels = t["r2_matrix"]["labels"]
    # M1 = M6 + 0 and M2 = M6 + 1 ... are shifted copies: pairwise R^2 of 1
    assert t["r2_matrix"]["values"][labels.index("M1")][labels.index("M9")] == pytest.approx(1.0)


def test_compare_without_runs_is_a_clear_error(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("compare", str(tmp_path))
    assert code == 2 and "no run folders" in err


def _run(root: Path, folder: str, subject: str, v: float, lo: float, hi: float, *, items: list | None = None,
         overrides: list[str] | None = None, reference: float | None = 50.0) -> None:
    e = {"value": v, "ci_low": lo, "ci_high": hi, "n": 40, "method": "wilson"}
    (root / folder).mkdir()
    (root / folder / "summary.json").write_text(json.dumps({
        "audit": {"name": "tp"}, "model": {"name": subject}, "overall": "PASS",
        "reproducibility": {"overrides": overrides or []},
        "metrics": {"bias_score": {"name": "bias_score", "headline": "score", "estimates": {"score": e},
                                   "reference": reference, "items": items or []}}}))


def test_ranking_by_distance_from_the_reference_with_ties(tmp_path: Path) -> None:
    _run(tmp_path, "0", "base", 60.0, 50.0, 70.0)
    _run(tmp_path, "1", "other", 40.0, 35.0, 45.0)  # 10 below parity: as far as "base" is above it
    _run(tmp_path, "2", "close", 52.0, 42.0, 62.0)
    _run(tmp_path, "3", "far", 80.0, 70.0, 90.0)
    [g] = compare([tmp_path]).rankings
    assert g.metric == "bias_score.score" and g.reference == 50.0 and g.columns[0] == "audit"
    ranks = {r.model: (r.rank, r.distance) for r in g.rows}
    # rank 1 = least biased; 40 and 60 are both 10 from parity: a tie, not ranks 2 and 3
    assert ranks == {"close": (1, 2.0), "base": (2, 10.0), "other": (2, 10.0), "far": (4, 30.0)}


def test_ranking_without_reference_is_by_value_smallest_first_and_says_so(tmp_path: Path) -> None:
    _run(tmp_path, "0", "a", 0.2, 0.1, 0.3, reference=None)
    _run(tmp_path, "1", "b", 0.6, 0.5, 0.7, reference=None)
    [g] = compare([tmp_path]).rankings
    assert [r.model for r in g.rows] == ["a", "b"] and "no no-bias reference" in g.order


def _sha(text: str) -> str:
    return __import__("hashlib").sha256(text.encode()).hexdigest()


def _items(outcomes: list[int], diffs: list[float] | None = None) -> list[dict]:
    # items pair on their stimulus's content hash (`stimulus_sha`), not on the row id
    return [{"stimulus": f"s{i}", "stimulus_sha": _sha(f"s{i}"), "cell": "base", "levels": {}, "outcome": o,
             **({"diff": diffs[i]} if diffs else {})} for i, o in enumerate(outcomes)]


def test_paired_mcnemar_detects_a_small_consistent_difference_the_intervals_hide(tmp_path: Path) -> None:
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    from biasaudit.stats import wilson

    rng = np.random.default_rng(7)
    a = (rng.random(200) < 0.5).astype(int)
    b = a.copy()
    flip = np.flatnonzero(a == 0)[:12]  # model B prefers the stereotype on 12 more stimuli, never fewer
    b[flip] = 1
    ea, eb = wilson(int(a.sum()), 200).scaled(100.0), wilson(int(b.sum()), 200).scaled(100.0)
    assert (eb.ci_low or 0) < (ea.ci_high or 0)  # the marginal intervals overlap: unpaired, no difference
    _run(tmp_path, "0", "A", ea.value or 0, ea.ci_low or 0, ea.ci_high or 0, items=_items(a.tolist()),
         overrides=["model=a", "spec=x.yaml"])
    _run(tmp_path, "1", "B", eb.value or 0, eb.ci_low or 0, eb.ci_high or 0, items=_items(b.tolist()),
         overrides=["model=b", "spec=x.yaml"])
    c = compare([tmp_path])
    [g] = c.paired
    [r] = g.rows
    assert r.test == "mcnemar-exact" and r.units == 200 and r.setting_a == "model=a"
    ref = sm_mcnemar([[int((a & b).sum()), 0], [12, int(((1 - a) & (1 - b)).sum())]], exact=True)
    assert r.p_value == pytest.approx(ref.pvalue) and r.p_value == pytest.approx(2 * 0.5**12)
    assert r.p_value < 0.05 and r.differs is True
    assert r.difference == pytest.approx(-12 / 200) and (r.diff_high or 0) < 0
    assert list(g.rows[0].model_dump()) == g.columns  # rows carry the named columns, in order
    assert [x.setting for x in c.runs] == ["model=a", "model=b"]  # only the swept override


def test_paired_continuous_scores_bootstrap_and_wilcoxon(tmp_path: Path) -> None:
    from scipy.stats import wilcoxon

    rng = np.random.default_rng(3)
    base = rng.normal(0, 3, 60)  # stimuli differ a lot
    da = base + rng.normal(0, 0.2, 60)
    db = base + 0.25 + rng.normal(0, 0.2, 60)  # B is 0.25 higher on every stimulus, give or take
    for folder, name, d in (("0", "A", da), ("1", "B", db)):
        its = [{"stimulus": f"s{i}", "stimulus_sha": _sha(f"s{i}"), "cell": "base", "levels": {}, "diff": float(x)}
               for i, x in enumerate(d)]
        m = float(d.mean())
        h = 1.96 * float(d.std(ddof=1)) / 60**0.5
        _run(tmp_path, folder, name, m, m - h, m + h, items=its, reference=0.0)
    c = compare([tmp_path])
    [r] = c.paired[0].rows
    assert r.test == "wilcoxon" and r.p_value == pytest.approx(wilcoxon(da, db).pvalue)
    assert r.difference == pytest.approx(float((da - db).mean()))
    assert (r.diff_high or 0) < 0 and r.p_value is not None and r.p_value < 0.05
    sbs = {x.model: x for x in c.side_by_side.rows}
    assert (sbs["A"].ci_high or 0) > (sbs["B"].ci_low or 0)  # the unpaired intervals overlap


def test_holm_across_pairs_of_runs(tmp_path: Path) -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(11)
    a = (rng.random(120) < 0.5).astype(int)
    runs = {"A": a}
    for name, k in (("B", 9), ("C", 3)):
        x = a.copy()
        x[np.flatnonzero(a == 0)[:k]] = 1
        runs[name] = x
    for i, (name, x) in enumerate(runs.items()):
        _run(tmp_path, str(i), name, 50.0, 40.0, 60.0, items=_items(x.tolist()))
    rows = compare([tmp_path]).paired[0].rows
    assert len(rows) == 3
    _, adj, _, _ = multipletests([r.p_value for r in rows], method="holm")
    assert [r.p_holm for r in rows] == pytest.approx(list(adj))


def test_compare_writes_csv_with_named_columns(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    import csv

    _run(tmp_path, "0", "A", 55.0, 45.0, 65.0, items=_items([1, 0, 1, 1]), overrides=["model=a"])
    _run(tmp_path, "1", "B", 50.0, 40.0, 60.0, items=_items([1, 0, 0, 1]), overrides=["model=b"])
    code, out, err = cli("compare", str(tmp_path))
    assert code == 0, err
    assert "model=a" in out and "mcnemar-exact" in out and "distance" in out
    rows = list(csv.DictReader((tmp_path / "compare" / "compare.csv").open()))
    assert [r["model"] for r in rows] == ["A", "B"] and rows[0]["setting"] == "model=a"
    paired_rows = list(csv.DictReader((tmp_path / "compare" / "paired.csv").open()))
    assert paired_rows[0]["test"] == "mcnemar-exact" and paired_rows[0]["units"] == "4"
    ranks = list(csv.DictReader((tmp_path / "compare" / "rankings.csv").open()))
    assert {r["model"]: r["rank"] for r in ranks} == {"B": "1", "A": "2"}
