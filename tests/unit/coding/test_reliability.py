"""Reliability of coding layers: kappa and alpha against sklearn and the Krippendorff
(2011) worked example, clustered intervals, IR and DNI by hand, panel agreement and the
position effect of counterbalanced choices."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from biasaudit.coding.coders.choice import position_report
from biasaudit.coding.layers import ReliabilityPair
from biasaudit.coding.reliability import (
    kappa_alpha,
    pair_report,
    panel_alpha,
    panel_report,
)
from biasaudit.records.codes import Code
from biasaudit.stats import krippendorff_alpha_nominal
from tests.coding_helpers import config, plan, unit


def test_kappa_and_alpha_match_the_references() -> None:
    a = list("AABBBCCAAB")
    b = list("ABBBCCCAAA")
    clusters = ["s1", "s1", "s2", "s2", "s3", "s3", "s4", "s4", "s5", "s5"]
    k, al = kappa_alpha(a, b, clusters)
    assert k.value == pytest.approx(cohen_kappa_score(a, b))
    assert al.value == pytest.approx(krippendorff_alpha_nominal([[x, y] for x, y in zip(a, b, strict=True)]))
    # by hand: 7 of 10 agree; marginals A 4/4, B 4/3, C 2/3 -> pe = (16 + 12 + 6) / 100 = 0.34
    assert k.value == pytest.approx((0.7 - 0.34) / (1 - 0.34))
    for e in (k, al):
        assert e.ci_low is not None and e.ci_high is not None and e.ci_low <= e.value <= e.ci_high
        assert e.clusters == 5 and e.method == "cluster-bootstrap-percentile"


def test_one_label_only_has_no_kappa() -> None:
    k, al = kappa_alpha(["A", "A"], ["A", "A"], ["s1", "s2"])
    assert k.value is None and al.value is None


def test_panel_alpha_on_krippendorffs_example() -> None:
    # Krippendorff (2011), nominal data, 4 observers x 12 units with missing values: alpha = 0.743
    n = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    units = [[None if v is None else str(v) for v in unit_values] for unit_values in zip(*coders, strict=True)]
    e = panel_alpha(units, [f"u{i}" for i in range(12)])
    assert e.value == pytest.approx(0.743, abs=5e-4) and e.n == 11  # the last unit has one value only
    assert e.ci_low is not None and e.ci_low < e.value <= e.ci_high <= 1.0


def test_pair_report_ir_dni_by_hand(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = config(tmp_path, factors={"t": {"x": {}, "y": {}}}, coding={
        "sel": {"coder": "rules", "labels": ["E", "D"], "endorse": ["E"], "rules": [{"keywords": ["yes"], "label": "E"}],
                "otherwise": "D"},
        "elab": {"coder": "rules", "labels": ["E", "QE", "D"], "endorse": ["E", "QE"],
                 "rules": [{"keywords": ["sure"], "label": "QE"}], "otherwise": "D"}})
    p = plan(cfg)
    units = [unit(i, stimulus=f"s{i % 3}", cell="t=x" if i < 3 else "t=y") for i in range(6)]
    sel = ["E", "E", "D", "D", "E", None]          # unit 5: not applicable (counts as not endorsing)
    elab = ["E", "D", "D", "QE", "QE", "QE"]
    codes = {
        "sel": {u.id: Code(unit=u.id, status="coded" if s else "not_applicable", label=s) for u, s in zip(units, sel, strict=True)},
        "elab": {u.id: Code(unit=u.id, status="coded", label=e) for u, e in zip(units, elab, strict=True)},
    }
    rep = pair_report(ReliabilityPair("sel", "elab", {}, {"QE": "E"}), p.layers, units, codes)
    # agreement over units both coded with a label (0-4), QE read as E: E/E, E/D, D/D, D/E, E/E -> 3 of 5
    assert rep.pooled.n == 5 and rep.pooled.percent.value == pytest.approx(3 / 5)
    assert rep.pooled.kappa.value == pytest.approx(cohen_kappa_score(["E", "E", "D", "D", "E"], ["E", "D", "D", "E", "E"]))
    # endorsement A = [1,1,0,0,1,0], B = [1,0,0,1,1,1] on all 6: IR = 3/6, DNI = (3 - 4)/6
    assert rep.pooled.ir is not None and rep.pooled.ir.value == pytest.approx(0.5)
    assert rep.pooled.dni is not None and rep.pooled.dni.value == pytest.approx(-1 / 6)
    assert set(rep.cells) == {"t=x", "t=y"} and rep.cells["t=x"].percent.value == pytest.approx(2 / 3)
    assert rep.labels == ["D", "E"]


def test_panel_report_pairwise_and_fleiss() -> None:
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    units = [unit(i, stimulus=f"s{i}") for i in range(5)]
    votes = [("A", "A", "B"), ("B", "B", "B"), ("A", "B", "A"), ("C", "C", "C"), ("A", "A", None)]
    codes = {u.id: Code(unit=u.id, status="coded", detail={"votes": dict(zip("xyz", v, strict=True))})
             for u, v in zip(units, votes, strict=True)}
    rep = panel_report("elab", units, codes)
    assert rep is not None and rep.judges == ["x", "y", "z"] and rep.n == 4
    full = [list(v) for v in votes[:4]]
    table, _ = aggregate_raters(np.array([["ABC".index(c) for c in row] for row in full]), n_cat=3)
    assert rep.fleiss == pytest.approx(fleiss_kappa(table, method="fleiss"))
    xy = next(r for r in rep.pairwise if r[:2] == ["x", "y"])
    assert xy[2] == 5 and xy[3] == pytest.approx(4 / 5)
    assert rep.alpha.value == pytest.approx(krippendorff_alpha_nominal([list(v) for v in votes]))


def test_position_effects() -> None:
    both = {f"u{i}": Code(unit=f"u{i}", status="coded", label="E", source="choice",
                          detail={"flipped": i < 2, "picked_first": [True, False]}) for i in range(8)}
    rep = position_report("parser", "both", both)
    assert rep is not None and rep.flips is not None and rep.flips.value == pytest.approx(2 / 8)
    # both orders asked: the first-listed option picked in 8 of 16 answers, against 1/2 with no n_options (binary)
    both2 = {f"u{i}": Code(unit=f"u{i}", status="coded", label="E", source="choice",
                           detail={"flipped": False, "picked_first": [True, i < 3], "n_options": 2}) for i in range(8)}
    rep3 = position_report("parser", "both", both2)
    assert rep3 is not None and rep3.first is not None and rep3.first.value == pytest.approx(11 / 16)
    assert rep3.first.n == 16 and rep3.expected_first == pytest.approx(0.5)
    rot = {f"u{i}": Code(unit=f"u{i}", status="coded", label="E", source="choice",
                         detail={"picked_first": [i < 6], "n_options": 4}) for i in range(8)}
    rep2 = position_report("parser", "rotate", rot)
    assert rep2 is not None and rep2.first is not None and rep2.first.value == pytest.approx(6 / 8)
    assert rep2.expected_first == pytest.approx(0.25)
    assert position_report("parser", "fixed", rot) is None
