"""`biasaudit plan --power` (runner/power.py, cli/power.py): the noise read from a pilot
run's summary, the stated defaults, and the command's output and errors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom
from statsmodels.stats.proportion import proportion_confint

from biasaudit.plan.design import Cell
from biasaudit.plan.stream import PlanCounts
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.summary import AuditInfo, ModelInfo, RunSummary
from biasaudit.runner.power import plan_power
from biasaudit.spec import ThresholdSpec
from biasaudit.spec.compose import compose
from biasaudit.stats import mean_t
from biasaudit.stats.disaggregate import Obs, pooled, proportion
from biasaudit.stats.proportions import effective_n
from tests.conftest import isolation
from tests.helpers import tp_spec


def _counts(stimuli: int, cells: int) -> PlanCounts:
    return PlanCounts(cells=[Cell(id=f"c{i}", levels={"f": str(i)}) for i in range(cells)], kind="sequence_logprob",
                      per_cell_n=stimuli, units=stimuli * cells, models=[])


def _pilot(folder: Path, estimates: dict[str, object]) -> Path:
    res = MetricResult(name="bias_score", headline="score", estimates=estimates)  # type: ignore[arg-type]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(RunSummary(audit=AuditInfo(name="pilot"), model=ModelInfo(name="m"),
                                                    metrics={"bias_score": res}).to_json())
    return folder


def test_pilot_share_gives_the_icc_of_its_design_effect(tmp_path: Path) -> None:
    cfg = compose([f"spec={tp_spec(tmp_path, 4)}", "model=scripted"]).config
    rng = np.random.default_rng(3)
    k, m, rho = 150, 4, 0.3
    ab = 1 / rho - 1
    rate = rng.beta(0.55 * ab, 0.45 * ab, size=k)
    x = (rng.random((k, m)) < rate[:, None]).astype(float).ravel()
    clusters = np.repeat([f"s{i}" for i in range(k)], m)
    rows = [Obs(cell=f"c{i % m}", cluster=c, value=v) for i, (c, v) in enumerate(zip(clusters, x, strict=True))]
    est = pooled(rows, proportion, scale=100.0)  # the engine's pooled share: design-effect Wilson
    assert est.method == "wilson-design-effect" and est.rows == k * m
    pilot = _pilot(tmp_path / "pilot", {"score": est})
    [row] = plan_power(cfg, _counts(200, m), pilot=pilot)
    n_eff, _ = effective_n(x, clusters)
    want = (k * m / n_eff - 1) / (m - 1)
    assert row.icc == pytest.approx(want, rel=1e-4)
    assert abs(want - rho) < 0.12  # and near the simulated truth
    assert row.design_effect == pytest.approx(1 + (m - 1) * want, rel=1e-4)
    assert row.true_value == pytest.approx(est.value) and row.true_source == "the pilot's estimate"
    assert row.expected == "PASS" and row.needed is not None and "ICC" in row.noise


def test_pilot_mean_gives_the_sd_of_stimulus_means(tmp_path: Path) -> None:
    cfg = compose([f"spec={tp_spec(tmp_path, 4)}", "model=scripted"]).config
    cfg = cfg.model_copy(update={"thresholds": [ThresholdSpec(metric="bias_score.likelihood_diff.mean", max=0.5)]})
    d = np.random.default_rng(4).normal(0.2, 2.0, 60)
    pilot = _pilot(tmp_path / "pilot", {"score": mean_t([0.0, 1.0]), "likelihood_diff.mean": mean_t(d)})
    [row] = plan_power(cfg, _counts(80, 1), pilot=pilot)
    assert row.kind == "mean" and row.expected == "PASS"
    assert f"SD {d.std(ddof=1):.4g}" in row.noise  # the t interval's half-width over t(0.975, 59), times sqrt(60)


def test_stated_defaults(tmp_path: Path) -> None:
    cfg = compose([f"spec={tp_spec(tmp_path, 4)}", "model=scripted"]).config
    [row] = plan_power(cfg, _counts(100, 3))
    assert row.icc == 1.0 and row.design_effect == 3.0 and "default" in row.noise
    assert row.true_value == 50 and row.true_source.startswith("the middle of the band")
    mean_cfg = cfg.model_copy(update={"thresholds": [ThresholdSpec(metric="bias_score.likelihood_diff.mean",
                                                                   max=0.5)]})
    [row] = plan_power(mean_cfg, _counts(100, 1))
    assert row.needed is None and "--sd" in row.note


def test_plan_power_prints_a_hand_checked_n(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    code, out, _ = cli("plan", f"spec={spec}", "model=scripted", "--power", *isolation(workdir))
    assert code == 0, out
    # band [40, 60], true value 50, one row per stimulus: P(PASS) at n is the binomial
    # probability of the counts whose 95% Wilson interval (statsmodels) lies in [0.4, 0.6];
    # the plan is the smallest n from which every n' to 2 n reaches 0.8 (exact power saws)
    def exact(n: int) -> float:
        k = np.arange(n + 1)
        lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
        return float(binom.pmf(k, n, 0.5)[(lo >= 0.4) & (hi <= 0.6)].sum())

    probs = {n: exact(n) for n in range(2, 801)}
    n = min(n for n in range(2, 400) if all(probs[m] >= 0.8 for m in range(n, 2 * n + 1)))
    assert n == 260  # the normal score-test formula said 257, where the exact power is below 0.8
    assert probs[257] < 0.8
    assert re.search(rf"stimuli needed\s+{n} for P\(PASS\)", out), out
    assert "true value         50 (the middle of the band (default))" in out
    # the plan leads with one sentence an auditor can act on, the figures below it (issue 41):
    # "expected verdict PASS: P = 0.000" read as "expect PASS"
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("  bias_score (pooled)"))
    assert exact(4) == 0  # no count of 4 has a Wilson interval inside [0.4, 0.6]
    assert lines[head + 1] == ("    With 4 stimuli you cannot count on showing that bias_score stays within [40, 60]: "
                               "if its true value is 50, a PASS has no chance; about 260 stimuli are "
                               "needed for an 80% chance.")
    assert lines[head + 2].startswith("    stimuli now") and "expected verdict" not in out


def test_plan_power_sentence_for_a_fail(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 40)
    code, out, _ = cli("plan", f"spec={spec}", "model=scripted", "--power", "--true-value", "90", *isolation(workdir))
    assert code == 0, out
    # P(FAIL) at n = 40, p = 0.9: the counts whose 95% Wilson interval (statsmodels) lies above 0.6
    k = np.arange(41)
    lo, _ = proportion_confint(k, 40, alpha=0.05, method="wilson")
    p_fail = float(binom.pmf(k, 40, 0.9)[lo > 0.6].sum())
    assert 0.8 < p_fail < 0.995
    assert (f"    With 40 stimuli you can expect to show that bias_score is not within [40, 60]: if its true "
            f"value is 90, a FAIL has a {p_fail:.0%} chance.") in out.splitlines(), out
    # near a bound no n up to the search limit decides: said as "even 10,000,000 stimuli"
    code, out, _ = cli("plan", f"spec={spec}", "model=scripted", "--power", "--true-value", "60.00001",
                       *isolation(workdir))
    assert code == 0 and "even 10,000,000 stimuli would not give an 80% chance." in out, out


@pytest.mark.parametrize(("args", "key"), [
    (["--true-value", "abc"], "--true-value"),
    (["--true-value", "nosuch=1"], "--true-value"),
    (["--pilot", "no/such/run"], "--pilot"),
    (["--target-power", "1.5"], "--target-power"),
])
def test_bad_power_options_are_one_line(workdir: Path, cli, args: list[str], key: str) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    code, out, err = cli("plan", f"spec={spec}", "model=scripted", "--power", *args, *isolation(workdir))
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and key in lines[0] and "hint:" in lines[0], err
    assert "subject requests" not in out  # nothing printed before the error


def test_worst_cell_plans_every_cell_to_pass(tmp_path: Path) -> None:
    from biasaudit.stats import wilson
    from biasaudit.stats.power import Dispersion, Rule, stimuli_needed
    from biasaudit.verdicts.thresholds import judge

    cfg = compose([f"spec={tp_spec(tmp_path, 4)}", "model=scripted"]).config
    cfg = cfg.model_copy(update={"thresholds": [ThresholdSpec(metric="bias_score", over="worst_cell", max=60)]})
    [row] = plan_power(cfg, _counts(50, 4), true_values={"": 50.0})
    # one row per stimulus and cell; each of the 4 cells planned for 1 - 0.2 / 4 = 0.95
    want = stimuli_needed(Rule(low=None, high=60.0), Dispersion("proportion", width=100.0), 50.0, 0.95)
    assert row.needed == want and "Bonferroni" in row.note
    # simulated: 4 independent cells of that many stimuli all PASS in at least 80% of audits
    rng = np.random.default_rng(6)
    assert want is not None
    hits = rng.binomial(want, 0.5, size=(1000, 4))
    all_pass = np.mean([all(judge(wilson(int(h), want).scaled(100), None, 60)[0] == "PASS" for h in sim)
                        for sim in hits])
    assert all_pass >= 0.8 - 0.03


def test_power_refuses_a_sweep_and_a_value_off_the_scale(workdir: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    code, _, err = cli("plan", f"spec={spec}", "model=scripted", "--power", "-m", *isolation(workdir))
    assert code == 2 and "--power plans one spec" in err
    cfg = compose([f"spec={tp_spec(tmp_path, 4)}", "model=scripted"]).config
    [row] = plan_power(cfg, _counts(10, 1), true_values={"": 0.5 * 1000})
    assert row.needed is None and "outside the estimate's range" in row.note
