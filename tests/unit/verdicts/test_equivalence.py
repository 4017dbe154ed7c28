"""Equivalence thresholds (TOST): the verdict rule, the 1 - 2 alpha interval made by the
estimate's own method, and the spec's checks."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats as st
from statsmodels.stats.proportion import proportion_confint

from biasaudit.records.estimate import Estimate
from biasaudit.records.verdict import VerdictRecord
from biasaudit.spec import ThresholdSpec
from biasaudit.stats import cluster_bootstrap, mean_t, wilson, wilson_clustered
from biasaudit.verdicts.claims import claim_text
from biasaudit.verdicts.thresholds import judge_equivalence, tost_estimate


def test_wilson_tost_interval_is_wilson_at_90() -> None:
    e = wilson(30, 50)
    lo, hi = proportion_confint(30, 50, alpha=0.10, method="wilson")
    assert e.tost_interval == pytest.approx((lo, hi))
    # scaled with the estimate (a rate reported in points)
    assert e.scaled(100).tost_interval == pytest.approx((100 * lo, 100 * hi))


def test_t_tost_interval_is_t_at_90() -> None:
    x = np.random.default_rng(0).normal(0.1, 1, 40)
    e = mean_t(x)
    want = st.t.interval(0.90, 39, loc=x.mean(), scale=x.std(ddof=1) / np.sqrt(40))
    assert e.tost_interval == pytest.approx(want)


def test_cluster_bootstrap_tost_interval_from_the_same_resamples() -> None:
    rng = np.random.default_rng(1)
    v = rng.normal(size=120)
    c = np.repeat(np.arange(40), 3)
    e95 = cluster_bootstrap(v, c, seed=7)
    e90 = cluster_bootstrap(v, c, seed=7, level=0.90)  # same seed, same resamples
    assert e95.tost_interval == pytest.approx((e90.ci_low, e90.ci_high))


def test_clustered_wilson_tost_interval_on_the_same_effective_n() -> None:
    rng = np.random.default_rng(2)
    x = (rng.random(150) < 0.5).astype(float)
    c = np.repeat(np.arange(50), 3)
    e95, e90 = wilson_clustered(x, c), wilson_clustered(x, c, level=0.90)
    assert e95.tost_interval == pytest.approx((e90.ci_low, e90.ci_high))


def test_rule() -> None:
    inside = wilson(500, 1000)           # 90% CI about [0.474, 0.526]
    assert judge_equivalence(inside, 0.45, 0.55)[0] == "PASS"
    v, why, tost = judge_equivalence(inside, 0.48, 0.52)
    assert v == "INCONCLUSIVE" and "not shown" in why and tost is not None and tost.level == pytest.approx(0.90)
    assert judge_equivalence(wilson(800, 1000), 0.45, 0.55)[0] == "FAIL"
    # between the two levels: the 95% interval touches the band, so no FAIL
    e = Estimate(value=0.6, ci_low=0.54, ci_high=0.66, n=100, method="x", tost_interval=(0.56, 0.64))
    assert judge_equivalence(e, 0.45, 0.55)[0] == "INCONCLUSIVE"
    e = Estimate(value=0.6, ci_low=0.56, ci_high=0.64, n=100, method="x", tost_interval=(0.57, 0.63))
    assert judge_equivalence(e, 0.45, 0.55)[0] == "FAIL"


def test_never_stretched_and_never_on_degenerate_estimates() -> None:
    # a bootstrap estimate without its 90% interval (rebuilt from JSON, say): no PASS
    e = Estimate(value=0.5, ci_low=0.45, ci_high=0.55, n=100, method="cluster-bootstrap-percentile")
    v, why, tost = judge_equivalence(e, 0.3, 0.7)
    assert v == "INCONCLUSIVE" and tost is None and "no 90% interval" in why
    assert tost_estimate(e) is None
    # a plain t estimate is recomputed exactly: the t quantile ratio on its standard error
    t = mean_t(np.arange(10.0))
    plain = t.model_copy(update={"tost_interval": None})
    again = tost_estimate(plain)
    assert again is not None and (again.ci_low, again.ci_high) == pytest.approx(t.tost_interval)
    constant = mean_t([0.5] * 20)
    assert judge_equivalence(constant, 0.0, 1.0)[0] == "INCONCLUSIVE"
    assert judge_equivalence(Estimate.no_data("wilson"), 0.0, 1.0)[0] == "INCONCLUSIVE"


def test_spec_checks() -> None:
    t = ThresholdSpec.model_validate({"metric": "m", "equivalence": {"low": 45, "high": 55}})
    assert t.band == (45, 55)
    for bad in ({"metric": "m", "equivalence": {"low": 55, "high": 45}},
                {"metric": "m", "max": 60, "equivalence": {"low": 45, "high": 55}},
                {"metric": "m", "over": "worst_cell", "adjust": "holm", "equivalence": {"low": 0, "high": 1}},
                {"metric": "m", "equivalence": {"low": 0}}):
        with pytest.raises(ValidationError):
            ThresholdSpec.model_validate(bad)


def test_records_keep_their_keys_and_say_their_claim() -> None:
    e = wilson(5, 10)
    plain = VerdictRecord(metric="m", over="pooled", min=None, max=1.0, estimate=e, verdict="PASS", refs=[],
                          reason="")
    dumped = plain.model_dump(mode="json")
    assert "equivalence" not in dumped and "tost" not in dumped and "tost_interval" not in dumped["estimate"]
    eq = plain.model_copy(update={"equivalence": True, "tost": e})
    assert eq.model_dump(mode="json")["equivalence"] is True
    assert claim_text("PASS", True, 45, 55) == "equivalence shown within [45, 55]"
    assert claim_text("PASS", False, None, 60) == "no deviation shown beyond the bound"


def test_a_run_reports_each_claim(workdir, cli) -> None:  # type: ignore[no-untyped-def]
    import json

    from tests.conftest import isolation
    from tests.helpers import tp_spec

    spec = tp_spec(workdir, 40)
    spec.write_text(spec.read_text().replace(
        "  - {metric: bias_score, min: 40, max: 60}",
        "  - {metric: bias_score, min: 40, max: 60}\n"
        "  - {metric: bias_score, equivalence: {low: 5, high: 95}}\n"
        "  - {metric: bias_score.likelihood_diff.mean, equivalence: {low: -100, high: 100}}"))
    code, out, _ = cli("run", f"spec={spec}", "model=scripted", "--junit", str(workdir / "j.xml"), *isolation(workdir))
    [run_dir] = [p for p in (workdir / "reports").glob("*/*") if p.is_dir()]
    s = json.loads((run_dir / "summary.json").read_text())
    bound, eq, eq_mean = s["verdicts"]
    assert "equivalence" not in bound and "tost" not in bound  # the keys a bound's verdict always had
    est = s["metrics"]["bias_score"]["estimates"]["score"]
    k = round(est["value"] / 100 * est["n"])
    lo, hi = proportion_confint(k, est["n"], alpha=0.10, method="wilson")
    assert eq["equivalence"] is True and eq["verdict"] == "PASS" and eq["tost"]["level"] == 0.9
    assert (eq["tost"]["ci_low"], eq["tost"]["ci_high"]) == pytest.approx((100 * lo, 100 * hi))
    assert eq_mean["verdict"] == "PASS"
    md = (run_dir / "report.md").read_text()
    assert "**PASS**: equivalence shown within \\[5, 95\\]" in md and "Equivalence bands (TOST)" in md
    assert "equivalence shown within [5, 95]" in (run_dir / "report.html").read_text()
    assert "claim: equivalence shown within [5, 95]" in (workdir / "j.xml").read_text()
    assert "bias_score equivalence shown within [5, 95]" in out
    from biasaudit.api import RunResult

    df = RunResult.load(run_dir).verdicts_df
    assert list(df["claim"])[1] == "equivalence shown within [5, 95]"
    assert (df["min"].iloc[1], df["max"].iloc[1]) == (5, 95)
