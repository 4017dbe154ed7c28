"""Group contrasts (issue 29, point 4): every pairwise difference between groups with a
95% interval (Newcombe hybrid score), z tests Holm-adjusted across the pairs, a paired
within-unit contrast where the design matches units across groups, and per-group table
rows that name their group. Checked against statsmodels and scipy on hand-made tables,
by a coverage simulation, and through a scripted `biasaudit run`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from biasaudit.stats.contrasts import group_rate, newcombe, pairwise_contrasts, two_proportion_z
from biasaudit.stats.disaggregate import Obs, contrast_estimates, contrast_table, group_contrasts
from tests.conftest import isolation
from tests.helpers import spec_and_operator


def _01(k: int, n: int) -> list[float]:
    return [1.0] * k + [0.0] * (n - k)


def test_newcombe_interval_and_z_test_match_statsmodels_on_a_2x2_table() -> None:
    # 7/20 vs 3/20
    d = newcombe(group_rate(_01(7, 20)), group_rate(_01(3, 20)))
    lo, hi = confint_proportions_2indep(7, 20, 3, 20, method="newcomb", compare="diff")
    assert d.value == pytest.approx(0.2)
    assert (d.ci_low, d.ci_high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    # by hand: Wilson bounds of each group, square-and-add (Newcombe 1998, method 10)
    z = st.norm.ppf(0.975)

    def wb(k: int, n: int) -> tuple[float, float]:
        p = k / n
        c, h = (p + z * z / (2 * n)) / (1 + z * z / n), z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return c - h, c + h

    (l1, u1), (l2, u2) = wb(7, 20), wb(3, 20)
    assert d.ci_low == pytest.approx(0.2 - np.sqrt((0.35 - l1) ** 2 + (u2 - 0.15) ** 2))
    assert d.ci_high == pytest.approx(0.2 + np.sqrt((u1 - 0.35) ** 2 + (0.15 - l2) ** 2))
    _, p = proportions_ztest([7, 3], [20, 20])
    assert two_proportion_z(group_rate(_01(7, 20)), group_rate(_01(3, 20))) == pytest.approx(p)
    assert two_proportion_z(group_rate(_01(0, 5)), group_rate(_01(0, 9))) == 1.0


def test_holm_across_pairs_equals_statsmodels() -> None:
    fam = pairwise_contrasts({"a": _01(12, 30), "b": _01(5, 30), "c": _01(20, 30), "d": _01(14, 30)})
    assert [(c.a, c.b) for c in fam.contrasts] == [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]
    raw = [c.p_value for c in fam.contrasts]
    _, adj, _, _ = multipletests(raw, method="holm")
    assert [c.p_holm for c in fam.contrasts] == pytest.approx(list(adj))
    assert "Holm" in fam.note and "6 pairs" in fam.note
    assert "Holm p" in fam.contrasts[0].difference.note


def test_paired_contrast_equals_ttest_rel() -> None:
    rng = np.random.default_rng(3)
    # 12 templates, each filled with groups a and b; two rows (prompt conditions) per filling
    units = [f"t{i}" for i in range(12)]
    va = {u: rng.integers(0, 2, 2).astype(float) for u in units}
    vb = {u: rng.integers(0, 2, 2).astype(float) for u in units}
    rows = [Obs(cell=c, cluster=f"{u}-{g}", value=float(v[u][j]), fields={"group": g, "template": u})
            for g, v in (("a", va), ("b", vb)) for u in units for j, c in enumerate(("x", "y"))]
    fam = group_contrasts(rows, "group", match=lambda o: str(o.fields["template"]), paired_units="item")
    assert fam is not None
    [c] = fam.contrasts
    ma, mb = [va[u].mean() for u in units], [vb[u].mean() for u in units]
    ref = st.ttest_rel(ma, mb)
    assert c.paired is not None and c.paired.n == 12
    assert c.paired.value == pytest.approx(np.mean(np.subtract(ma, mb)))
    assert c.paired_p == pytest.approx(ref.pvalue)
    lo, hi = ref.confidence_interval(0.95)
    assert (c.paired.ci_low, c.paired.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    # independent contrast on the same rows: each filling is a cluster of two rows
    assert fam.groups["a"].clusters == 12 and fam.groups["a"].n == 24
    est = contrast_estimates(fam, "group")
    assert set(est) == {"contrast.group.a-b", "contrast.group.a-b.paired"}


def test_pairwise_intervals_cover_the_true_difference() -> None:
    rng = np.random.default_rng(20240529)
    reps, covered = 2000, 0
    pa, pb, na, nb = 0.35, 0.2, 60, 80
    for _ in range(reps):
        ka, kb = int(rng.binomial(na, pa)), int(rng.binomial(nb, pb))
        d = newcombe(group_rate(_01(ka, na)), group_rate(_01(kb, nb)))
        assert d.ci_low is not None and d.ci_high is not None
        covered += d.ci_low <= pa - pb <= d.ci_high
    assert 0.93 <= covered / reps <= 0.97, covered / reps


def test_more_groups_than_the_bound_keeps_only_max_minus_min() -> None:
    values = {f"g{i:02d}": _01(i, 20) for i in range(12)}
    fam = pairwise_contrasts(values)
    assert not fam.all_pairs and len(fam.contrasts) == 1
    [c] = fam.contrasts
    assert (c.a, c.b) == ("g11", "g00") and c.p_holm is None
    assert "66 pairs exceed the bound of 45" in fam.note and "max - min" in fam.note
    t = contrast_table(fam, "grp", "rate")
    assert t is not None and t.title.startswith("Largest minus smallest") and "bound of 45" in t.note


SPEC = """
audit: {name: contrasts, method: label_rates}
stimuli:
  inline:
STIMULI
  id_field: id
factors:
  framing:
    a: {template: "A: {{ statement }}"}
    b: {template: "B: {{ statement }}"}
probe: {kind: generate, max_tokens: 20}
model:
  backend: scripted
  name: subject
  script:
    replies: {"Group A": "Yes, they are.", "Group B member 1": "Yes.", "Group B member 2": "Yes.", "A: Group C": "Yes."}
coding:
  stance:
    coder: rules
    labels: [agree, disagree]
    otherwise: disagree
    expect_dominant: true
    rules:
      - {pattern: '^yes', label: agree}
metrics:
  - {name: label_rate, id: agree_rate, layer: stance, labels: [agree], by: [group], match: template}
thresholds:
  - {metric: agree_rate, max: 0.9}
  - {metric: agree_rate.contrast.group.a-c, max: 0.5}
"""


def test_run_reports_contrasts_and_names_groups(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    lines = [f'    - {{id: t{t}{g}, statement: "Group {g.upper()} member {t} is lazy.", group: {g}, template: t{t}}}'
             for t in range(1, 7) for g in "abc"]
    s, ops = spec_and_operator(workdir / "c.yaml", SPEC.replace("STIMULI", "\n".join(lines)))
    code, out, err = cli("run", f"spec={s}", *ops, *isolation(workdir))
    assert code in (0, 1, 3), (out, err)
    [run] = [p for p in (workdir / "reports").rglob("summary.json")]
    sm = json.loads(run.read_text(encoding="utf-8"))
    m = sm["metrics"]["agree_rate"]
    est = m["estimates"]
    # a: 12/12 agree, b: 4/12 (members 1, 2), c: 6/12 (framing a only)
    assert est["rate.group.a"]["value"] == pytest.approx(1.0)
    assert est["contrast.group.a-b"]["value"] == pytest.approx(1 - 4 / 12)
    assert est["contrast.group.a-c"]["value"] == pytest.approx(0.5)
    assert est["contrast.group.a-c"]["method"] == "newcombe-hybrid-score"
    assert est["contrast.group.b-c"]["value"] == pytest.approx(4 / 12 - 0.5)
    assert est["contrast.group.a-b.paired"]["n"] == 6 and est["contrast.group.a-b.paired"]["method"] == "paired-t"
    assert "Holm p" in est["contrast.group.a-b"]["note"]
    [v] = [v for v in sm["verdicts"] if v["metric"] == "agree_rate.contrast.group.a-c"]
    assert v["verdict"] in ("PASS", "FAIL", "INCONCLUSIVE")
    tables = {t["title"]: t for t in m["tables"]}
    per_group = tables["rate by group"]
    assert [r[0] for r in per_group["rows"]] == ["a", "b", "c"]
    pairs = tables["Pairwise differences of rate by group"]
    assert [(r[0], r[1]) for r in pairs["rows"]] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert all(r[0] and r[1] for r in pairs["rows"])
    assert "Holm" in pairs["note"] and "paired item" in pairs["columns"][9]


def test_biaxis_contrasts_factor_levels_within_statements(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from tests.helpers import biaxis_spec

    s, ops = biaxis_spec(workdir)
    cli("run", f"spec={s}", *ops, *isolation(workdir))
    [run] = [p for p in (workdir / "reports").rglob("summary.json")]
    m = json.loads(run.read_text(encoding="utf-8"))["metrics"]["biaxis"]
    est = m["estimates"]
    for f, (a, b) in (("task", ("bj", "explain")), ("tone", ("calm", "upset"))):
        d = est[f"contrast.{f}.{a}-{b}"]
        assert d["value"] == pytest.approx(est[f"union.{f}.{a}"]["value"] - est[f"union.{f}.{b}"]["value"])
        assert d["method"] == "newcombe-hybrid-score"
        assert est[f"contrast.{f}.{a}-{b}.paired"]["n"] == 6  # the six statements, each at both levels
    tables = {t["title"]: t for t in m["tables"]}
    t = tables["Pairwise differences of BER_union by task"]
    assert t["rows"][0][:2] == ["bj", "explain"] and "paired statement" in t["columns"]


def test_a_paired_contrast_without_spread_is_undefined_not_a_zero_width_interval() -> None:
    """One matched unit, or every unit differing by the same amount, gives a t interval of
    no width: undefined (value None, the reason in the note), so no threshold decides on it."""
    from biasaudit.stats.contrasts import paired_difference_t

    one, p1 = paired_difference_t([1.0], [0.0])
    same, p2 = paired_difference_t([1.0, 1.0, 0.5], [0.5, 0.5, 0.0])
    assert one.value is None and p1 is None and "one matched unit" in one.note
    assert same.value is None and p2 is None and "differ by the same amount" in same.note and same.n == 3
    spread, p3 = paired_difference_t([1.0, 0.0, 1.0], [0.0, 0.0, 0.5])
    assert spread.value == pytest.approx(0.5) and spread.ci_low is not None and p3 is not None


def test_welch_difference_of_means_equals_scipy_and_holm_equals_statsmodels() -> None:
    from biasaudit.stats.contrasts import pairwise_mean_contrasts, welch_difference

    a, b, c = [0.1, 0.4, 0.35, 0.8, 0.5], [0.0, -0.2, 0.1, 0.05], [0.3, 0.3, 0.6, 0.2, 0.9, 0.4]
    e, p = welch_difference(a, b)
    ref = st.ttest_ind(a, b, equal_var=False)
    assert e.value == pytest.approx(np.mean(a) - np.mean(b)) and p == pytest.approx(ref.pvalue)
    assert (e.ci_low, e.ci_high) == tuple(pytest.approx(x) for x in ref.confidence_interval(0.95))
    fam = pairwise_mean_contrasts({"a": a, "b": b, "c": c})
    raw = [st.ttest_ind(x, y, equal_var=False).pvalue for x, y in ((a, b), (a, c), (b, c))]
    _, adj, _, _ = multipletests(raw, method="holm")
    assert [x.p_holm for x in fam.contrasts] == pytest.approx(list(adj))
    one, p1 = welch_difference([1.0], [0.0, 1.0])
    flat, p2 = welch_difference([1.0, 1.0], [0.0, 0.0])
    assert one.value is None and p1 is None and "fewer than two" in one.note
    assert flat.value is None and p2 is None and "neither group varies" in flat.note


def test_a_contrast_with_an_undefined_group_is_undefined() -> None:
    from biasaudit.records.estimate import Estimate
    from biasaudit.stats.disaggregate import defined_contrasts

    fam = pairwise_contrasts({"a": _01(5, 10), "b": _01(3, 10), "c": _01(4, 10)})
    est = contrast_estimates(fam, "g")
    groups = {"a": Estimate(value=0.5, ci_low=0.2, ci_high=0.8, n=10, method="wilson"),
              "b": Estimate.no_data("wilson", "undefined: every pair ties"),
              "c": Estimate(value=0.4, ci_low=0.1, ci_high=0.7, n=10, method="wilson")}
    out = defined_contrasts(est, fam, groups)
    assert out["contrast.g.a-c"] == est["contrast.g.a-c"]
    for k in ("contrast.g.a-b", "contrast.g.b-c"):
        assert out[k].value is None and out[k].note.startswith("undefined: the estimate of group b")
        assert out[k].n == est[k].n
