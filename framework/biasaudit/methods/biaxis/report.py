"""BiAxisAudit's report section (`present`, its `MetricDef.present`): the tables and plots
of what `metric.compute` measured, drawn from the result's records (the pooled, per-cell
and per-level estimates, the counts, `BiaxisDetail`: per-cell BER rates, per-factor
spreads, two-way eta^2, judge agreement, coding counts); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel

from biasaudit.methods.biaxis.metric import BiaxisParams
from biasaudit.methods.biaxis.records import (
    BiaxisDetail,
    CellRow,
    CodingCounts,
    FactorDetail,
    JudgeAgreement,
)
from biasaudit.metrics.base import Presentation
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult, PlotSpec, Table
from biasaudit.spec import AuditConfig
from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.disaggregate import contrast_table
from biasaudit.stats.effects import TwoWayEta

CELL_COLUMNS = ["cell", "n", "BER_sel", "BER_elab", "BER_cor", "BER_union", "union CI low", "union CI high", "OED",
                "UED", "IR", "DNI", "IR/BER_union", "cancellation trap", "mean output tokens", "Pareto-optimal",
                "layer rerouting"]


def short_label(levels: Mapping[str, str], baseline: Mapping[str, str]) -> str:
    """A cell named by how it differs from the baseline (plots stay readable)."""
    diff = [f"{f}={lv}" for f, lv in levels.items() if baseline.get(f) != lv]
    return ",".join(diff) if diff else "baseline"


def _cell_row(c: CellRow, union: Estimate) -> list[Any]:
    return [c.cell, c.n, c.sel, c.elab, c.cor, c.union, union.ci_low, union.ci_high, c.oed, c.ued, c.ir, c.dni,
            c.ir_over_union, c.trap, c.tokens, c.pareto, c.reroute]


def cell_table(cells: Sequence[CellRow], union: Mapping[str, Estimate], trap_dni: float, trap_ir: float) -> Table:
    """One row per cell; `union`: BER_union per cell with its interval."""
    return Table(title="BER family per cell (divergence-eligible base)", columns=CELL_COLUMNS,
                 rows=[_cell_row(c, union[c.cell]) for c in cells],
                 note=f"Wilson 95% intervals per cell. Trap: |DNI| < {trap_dni} while IR >= {trap_ir}. Pareto: "
                      "no other cell has both lower BER_union and fewer output tokens. Rerouting: BER_sel falls vs "
                      "the baseline cell while BER_elab does not.")


def reliability_map(cells: Sequence[CellRow], baseline: Mapping[str, str], trap_dni: float) -> PlotSpec:
    return PlotSpec(kind="reliability_map", title="(IR, DNI) reliability map per cell", xlabel="IR (disagreement)",
                    ylabel="DNI (direction)", labels=[short_label(c.levels, baseline) for c in cells],
                    points=[[c.ir, c.dni, c.sel] for c in cells], reference=trap_dni,
                    alt="Each prompt condition placed by its inconsistency rate and net imbalance; shaded: reliable "
                        "(IR < 0.10), over-estimation (DNI > 0), under-estimation (DNI < 0), and the cancellation-trap band.")


class FactorView(NamedTuple):
    """BER_union over one factor's levels, as the report shows it."""

    name: str
    levels: list[str]
    estimates: list[Estimate]
    """BER_union of each of `levels`."""
    contrasts: ContrastFamily | None
    range: float | None
    eta: float | None
    responses: int

    @classmethod
    def of(cls, f: FactorDetail, est: Mapping[str, Estimate]) -> FactorView:
        """The factor's detail with its estimates (`union.<factor>.<level>`, `spread.<factor>.range`)."""
        spread = est.get(f"spread.{f.name}.range")
        return cls(name=f.name, levels=f.levels, estimates=[est[f"union.{f.name}.{lv}"] for lv in f.levels],
                   contrasts=f.contrasts, range=spread.value if spread is not None else None, eta=f.eta,
                   responses=f.responses)


def level_plot(f: FactorView) -> PlotSpec:
    return PlotSpec(kind="interval_bars", title=f"BER_union by {f.name} level (95%)", xlabel=f.name,
                    ylabel="BER_union", labels=list(f.levels), estimates=list(f.estimates),
                    alt=f"Endorsement rate on either layer for each level of {f.name}.")


def spread_table(factors: Sequence[FactorView]) -> Table:
    return Table(title="Horizontal spread per factor",
                 columns=["factor", "levels", "range of BER_union", "eta^2 (one-way)", "responses"],
                 rows=[[f.name, len(f.levels), f.range, f.eta, f.responses] for f in factors],
                 note="On OAT designs each factor is read within its own sweep (the other factors at baseline).")


def contrast_tables(factors: Sequence[FactorView]) -> list[Table]:
    """Every pair of a factor's levels (the factors with a contrast to show)."""
    out = []
    for f in factors:
        ct = contrast_table(f.contrasts, f.name, "BER_union")
        if ct is not None:
            out.append(ct.model_copy(update={"note": ct.note + (
                " The levels share statements, so the independent-groups interval ignores the pairing (it is "
                "conservative when a statement's levels agree); the paired columns use it.")}))
    return out


def two_way_table(effects: Sequence[TwoWayEta]) -> Table:
    return Table(title="Two-way eta^2 (main effects and interaction)", columns=[
        "factor A", "factor B", "eta^2 A", "eta^2 B", "eta^2 A x B", "n", "note"],
        rows=[[r.a, r.b, r.eta2_a, r.eta2_b, r.eta2_interaction, r.n, r.note] for r in effects])


def interaction_plot(factor_a: str, factor_b: str, levels_a: list[str],
                     series: dict[str, list[float | None]]) -> PlotSpec:
    """BER_union over the levels of `factor_a`, one line per level of `factor_b`."""
    return PlotSpec(kind="lines", title=f"{factor_a.capitalize()} x {factor_b} interaction (BER_union)",
                    xlabel=factor_a, ylabel="BER_union", labels=levels_a, series=series,
                    alt=f"BER_union per {factor_a}, one line per {factor_b} level; crossing lines mean interaction.")


def agreement_tables(pairs: Sequence[JudgeAgreement]) -> list[Table]:
    if not pairs:
        return []
    return [Table(title="Judge agreement (elaboration layer)", columns=["judges", "responses", "raw agreement", "kappa"],
                  rows=[[r.judges, r.responses, r.agreement, r.kappa] for r in pairs],
                  note="Cohen's kappa per pair (sklearn), Fleiss' kappa for the panel (statsmodels).")]


def quality_table(counts: Mapping[str, int], q: CodingCounts) -> Table:
    """`counts` gives the responses, the eligible ones, the parser's and the unparsed."""
    return Table(title="Data quality", columns=["quantity", "value"], rows=[
        ["responses", counts["responses"]], ["divergence-eligible", counts["eligible"]],
        ["selection by rules", q.rules],
        ["selection by the LLM parser (fallback)", counts["parser_fallbacks"]],
        ["selection unparsed (Abstain)", counts["unparsed"]],
        ["no selection layer (free-text tasks, A = 0)", q.no_selection],
        ["elaboration Abstain (no judge majority)", q.elaboration_abstain],
        ["refusals (selection R)", q.refusals]])


def present(result: MetricResult, params: BaseModel, cfg: AuditConfig) -> Presentation:
    """The cells, the spread per factor, the level contrasts, the two-way effects (a
    factorial design), the judges' agreement, the data quality; the reliability map, a
    plot per factor, the task x sentiment interaction (a factorial design with both)."""
    assert isinstance(params, BiaxisParams)
    detail = BiaxisDetail.model_validate(result.detail)
    factors = [FactorView.of(f, result.estimates) for f in detail.factors]
    tables = [cell_table(detail.cells, result.cells.get("union", {}), params.trap_dni, params.trap_ir),
              spread_table(factors), *contrast_tables(factors)]
    plots = [reliability_map(detail.cells, cfg.design.baseline or {}, params.trap_dni),
             *(level_plot(f) for f in factors)]
    if detail.two_way is not None:
        tables.append(two_way_table(detail.two_way))
    if detail.interaction is not None:
        i = detail.interaction
        plots.append(interaction_plot(i.factor_a, i.factor_b, i.levels_a, i.series))
    tables += agreement_tables(detail.judges)
    tables.append(quality_table(result.counts, detail.coding))
    return tables, plots
