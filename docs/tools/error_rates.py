"""Simulated error rates of every threshold kind with the truth on the bound.

Each scenario draws seeded audits whose true value lies exactly on a threshold's bound (or
an equivalence band's edge), computes the estimate with the project's own estimators
(`stats.disaggregate.pooled` / `by_cell`, `stats.impact.impact_ratios`) and decides it
with the project's own verdict code (`verdicts.thresholds.evaluate`, and for sequential
runs `verdicts.sequential.look_verdicts` at each look, stopping at the first decision).
The rate reported is how often a verdict is reached that the truth does not support:

- bound (`max: b`, truth b) and band (`min`/`max`, truth on `min`): PASS or FAIL at all,
  nominal 5% (each is a one-sided test at 2.5%);
- equivalence (TOST band, truth on an edge): PASS (equivalence shown), nominal 5%;
- worst cell (every cell's truth on `max`): FAIL, nominal 2.5% with `adjust: holm` or
  `bonferroni`; with `adjust: none` each cell is tested at 2.5%, so k cells FAIL with
  1 - 0.975^k (given as its nominal rate);
- lowest impact ratio (`min: 0.8`, the lowest true ratio 0.8): FAIL, nominal 2.5%;
- sequential (Lan-DeMets spending, truth on `max`): PASS or FAIL at any look, nominal 5%.

Usage (regenerates the table in docs/statistics.md, "Simulated error rates"):

    PYTHONPATH=framework python docs/tools/error_rates.py --reps 3000

It prints a Markdown table: kind, estimate, stimuli, nominal rate, simulated rate and the
Monte Carlo standard error sqrt(r (1 - r) / reps). Seeded: the same arguments give the
same table.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult
from biasaudit.spec import ThresholdSpec
from biasaudit.stats.disaggregate import Obs, by_cell, mean, pooled, proportion
from biasaudit.stats.impact import impact_ratios
from biasaudit.stats.sequential import Boundaries, boundaries, look_sizes
from biasaudit.verdicts.sequential import look_verdicts
from biasaudit.verdicts.thresholds import evaluate

METRIC = "sim"


@dataclass(frozen=True)
class Scenario:
    kind: str
    estimate: str
    stimuli: str
    nominal: float
    wrong: frozenset[str]
    """Verdicts the truth does not support."""
    draw: Callable[[np.random.Generator], str]
    """One seeded audit -> its verdict."""


def _result(est: Estimate, cells: dict[str, Estimate] | None = None) -> dict[str, MetricResult]:
    # a share is a label_rate's: the verdict code reads the declared range [0, 1] from the
    # registered metric (Holm/Bonferroni and share_test: exact recount the share on it)
    name = "label_rate" if est.method.startswith("wilson") else METRIC
    return {METRIC: MetricResult(name=name, headline="value", estimates={"value": est},
                                 cells={"value": cells} if cells is not None else {})}


def _verdict(t: ThresholdSpec, est: Estimate, cells: dict[str, Estimate] | None = None) -> str:
    return str(evaluate([t], _result(est, cells))[0].verdict)


def _mean_rows(rng: np.random.Generator, k: int, truth: float, m: int = 3) -> list[Obs]:
    """k stimuli under m prompt conditions: a stimulus effect (sd 1) plus row noise (sd 0.5)."""
    b = truth + rng.standard_normal(k)
    v = b[:, None] + 0.5 * rng.standard_normal((k, m))
    return [Obs(cell=f"c{j}", cluster=f"s{i}", value=float(v[i, j])) for i in range(k) for j in range(m)]


def _share_rows(rng: np.random.Generator, k: int, p: float, m: int = 1, icc: float = 0.0) -> list[Obs]:
    """k stimuli under m conditions, 0/1 rows with rate p; with `icc` a stimulus's own rate
    is Beta with that intra-cluster correlation."""
    if m > 1 and icc > 0:
        ab = 1 / icc - 1
        rate = rng.beta(p * ab, (1 - p) * ab, size=k)
    else:
        rate = np.full(k, p)
    y = rng.random((k, m)) < rate[:, None]
    return [Obs(cell=f"c{j}", cluster=f"s{i}", value=float(y[i, j])) for i in range(k) for j in range(m)]


def _pooled_mean(k: int, truth: float, t: ThresholdSpec) -> Callable[[np.random.Generator], str]:
    return lambda rng: _verdict(t, pooled(_mean_rows(rng, k, truth), mean))


def _pooled_share(k: int, p: float, t: ThresholdSpec, m: int = 1, icc: float = 0.0
                  ) -> Callable[[np.random.Generator], str]:
    return lambda rng: _verdict(t, pooled(_share_rows(rng, k, p, m, icc), proportion))


def _worst_cell(k: int, truth: float, cells: int, adjust: str) -> Callable[[np.random.Generator], str]:
    t = ThresholdSpec(metric=METRIC, max=truth, over="worst_cell", adjust=adjust)

    def draw(rng: np.random.Generator) -> str:
        rows = _mean_rows(rng, k, truth, m=cells)
        return _verdict(t, pooled(rows, mean), by_cell(rows, mean))
    return draw


def _lowest_ratio(per_group: int, rates: list[float]) -> Callable[[np.random.Generator], str]:
    t = ThresholdSpec(metric=METRIC, min=0.8)

    def draw(rng: np.random.Generator) -> str:
        values = {f"g{i}": list((rng.random(per_group) < p).astype(float)) for i, p in enumerate(rates)}
        return _verdict(t, impact_ratios(values, by=("group",)).lowest())
    return draw


def _sequential(planned: int, every: int, truth: float, spending: str, share: bool
                ) -> Callable[[np.random.Generator], str]:
    t = ThresholdSpec(metric=METRIC, max=truth)
    sizes = look_sizes(planned, every)
    fractions = [s / planned for s in sizes]

    @cache
    def bounds_for(alpha: float) -> Boundaries:
        return boundaries(fractions, alpha, spending)

    def draw(rng: np.random.Generator) -> str:
        rows = _share_rows(rng, planned, truth) if share else _mean_rows(rng, planned, truth)
        m = len(rows) // planned
        for k, size in enumerate(sizes):
            est = pooled(rows[:size * m], proportion if share else mean)
            v = str(look_verdicts([t], _result(est), bounds_for, k)[0].verdict)
            if v != "INCONCLUSIVE":
                return v
        return "INCONCLUSIVE"
    return draw


DECIDED = frozenset({"PASS", "FAIL"})
PASS = frozenset({"PASS"})
FAIL = frozenset({"FAIL"})


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    bound_mean = ThresholdSpec(metric=METRIC, max=0.0)
    for k in (5, 10, 100):
        out.append(Scenario("bound", "mean, 3 conditions (cluster-t)", str(k), 0.05, DECIDED,
                            _pooled_mean(k, 0.0, bound_mean)))
    bound_share = ThresholdSpec(metric=METRIC, max=0.3)
    for k in (10, 200):
        out.append(Scenario("bound", "share, 1 row (Wilson)", str(k), 0.05, DECIDED,
                            _pooled_share(k, 0.3, bound_share)))
    exact_bound = ThresholdSpec(metric=METRIC, max=0.3, share_test="exact")
    for k in (10, 200):
        out.append(Scenario("bound", "share, 1 row (Clopper-Pearson, share_test: exact)", str(k), 0.05, DECIDED,
                            _pooled_share(k, 0.3, exact_bound)))
    for k in (10, 100):
        out.append(Scenario("bound", "share, 3 conditions, ICC 0.3 (design-effect Wilson)", str(k), 0.05,
                            DECIDED, _pooled_share(k, 0.3, bound_share, m=3, icc=0.3)))
    band_mean = ThresholdSpec(metric=METRIC, min=-0.5, max=0.5)
    for k in (5, 10, 100):
        out.append(Scenario("band", "mean, 3 conditions (cluster-t)", str(k), 0.05, DECIDED,
                            _pooled_mean(k, -0.5, band_mean)))
    band_share = ThresholdSpec(metric=METRIC, min=0.2, max=0.4)
    out.append(Scenario("band", "share, 1 row (Wilson)", "200", 0.05, DECIDED, _pooled_share(200, 0.2, band_share)))
    eq_mean = ThresholdSpec(metric=METRIC, equivalence={"low": -0.5, "high": 0.5})
    for k in (5, 10, 100):
        out.append(Scenario("equivalence", "mean, 3 conditions (cluster-t)", str(k), 0.05, PASS,
                            _pooled_mean(k, 0.5, eq_mean)))
    eq_share = ThresholdSpec(metric=METRIC, equivalence={"low": 0.1, "high": 0.3})
    for k in (69, 400):  # truth on the lower edge, the worse one for a Wilson share (issue 38)
        out.append(Scenario("equivalence", "share, 1 row (Wilson)", str(k), 0.05, PASS,
                            _pooled_share(k, 0.1, eq_share)))
    eq_exact = ThresholdSpec(metric=METRIC, equivalence={"low": 0.1, "high": 0.3}, share_test="exact")
    for k in (69, 400):
        out.append(Scenario("equivalence", "share, 1 row (Clopper-Pearson, share_test: exact)", str(k), 0.05, PASS,
                            _pooled_share(k, 0.1, eq_exact)))
    for adjust, sizes in (("holm", (10, 100)), ("bonferroni", (100,))):
        for k in sizes:
            out.append(Scenario(f"worst cell ({adjust})", "mean per cell, 4 cells (t)", str(k), 0.025, FAIL,
                                _worst_cell(k, 0.0, 4, adjust)))
    out.append(Scenario("worst cell (none)", "mean per cell, 4 cells (t)", "100", 1 - 0.975**4, FAIL,
                        _worst_cell(100, 0.0, 4, "none")))
    for per in (100, 400):
        out.append(Scenario("lowest impact ratio", "5 groups, rates 0.5 x 4 and 0.4 (Katz)", f"{per} per group",
                            0.025, FAIL, _lowest_ratio(per, [0.5, 0.5, 0.5, 0.5, 0.4])))
    out.append(Scenario("lowest impact ratio", "5 groups, rates 0.5 x 3 and 0.4 x 2 (the least favourable)",
                        "100 per group", 0.025, FAIL, _lowest_ratio(100, [0.5, 0.5, 0.5, 0.4, 0.4])))
    for spending in ("pocock", "obrien_fleming"):
        out.append(Scenario(f"sequential ({spending})", "mean, 3 conditions (cluster-t), looks every 5",
                            "10", 0.05, DECIDED, _sequential(10, 5, 0.0, spending, share=False)))
        if spending == "pocock":
            out.append(Scenario(f"sequential ({spending})", "mean, 3 conditions (cluster-t), looks every 20",
                                "100", 0.05, DECIDED, _sequential(100, 20, 0.0, spending, share=False)))
        out.append(Scenario(f"sequential ({spending})", "share, 1 row (Wilson), looks every 100", "400", 0.05,
                            DECIDED, _sequential(400, 100, 0.1, spending, share=True)))
    return out


def run(reps: int, seed: int, only: str | None) -> list[tuple[Scenario, float]]:
    out = []
    for i, s in enumerate(scenarios()):
        if only is not None and not s.kind.startswith(only):
            continue
        rng = np.random.default_rng([seed, i])
        t0 = time.time()
        hits = sum(s.draw(rng) in s.wrong for _ in range(reps))
        rate = hits / reps
        print(f"  {s.kind} / {s.estimate} / {s.stimuli}: {rate:.4f} ({time.time() - t0:.1f} s)", file=sys.stderr)
        out.append((s, rate))
    return out


def table(rows: list[tuple[Scenario, float]], reps: int) -> str:
    lines = ["| kind | estimate | stimuli | nominal rate | simulated rate | Monte Carlo s.e. |",
             "|---|---|---|---|---|---|"]
    for s, r in rows:
        se = math.sqrt(r * (1 - r) / reps)
        lines.append(f"| {s.kind} | {s.estimate} | {s.stimuli} | {100 * s.nominal:.2f}% | {100 * r:.2f}% | "
                     f"{100 * se:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--reps", type=int, default=3000, help="seeded audits per scenario (default 3000)")
    ap.add_argument("--seed", type=int, default=38, help="seed (default 38)")
    ap.add_argument("--only", default=None, help="only the scenarios whose kind starts with this")
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    rows = run(args.reps, args.seed, args.only)
    print(f"Truth on the bound; {args.reps} seeded audits per row (seed {args.seed}).\n")
    print(table(rows, args.reps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
