"""BiAxisAudit's report section: the tables and plots of what `metric.compute` measured.

Pure functions of values already computed (per-cell BER families, per-factor spreads,
two-way eta^2, judge agreement, data-quality counts); nothing here estimates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from biasaudit.records.metric_result import PlotSpec, Table
from biasaudit.stats.disaggregate import contrast_table

if TYPE_CHECKING:
    from biasaudit.methods.biaxis.metric import CellBER, DataQuality, FactorSpread, JudgeAgreement
    from biasaudit.stats.effects import TwoWayEta

CELL_COLUMNS = ["cell", "n", "BER_sel", "BER_elab", "BER_cor", "BER_union", "union CI low", "union CI high", "OED",
                "UED", "IR", "DNI", "IR/BER_union", "cancellation trap", "mean output tokens", "Pareto-optimal",
                "layer rerouting"]


def short_label(levels: Mapping[str, str], baseline: Mapping[str, str]) -> str:
    """A cell named by how it differs from the baseline (plots stay readable)."""
    diff = [f"{f}={lv}" for f, lv in levels.items() if baseline.get(f) != lv]
    return ",".join(diff) if diff else "baseline"


def _cell_row(c: CellBER) -> list[Any]:
    union = c.estimates["union"]
    return [c.cell, c.n, c.sel, c.elab, c.cor, c.union, union.ci_low, union.ci_high, c.oed, c.ued, c.ir, c.dni,
            c.ir_over_union, c.trap, c.tokens, c.pareto, c.reroute]


def cell_table(cells: Sequence[CellBER], trap_dni: float, trap_ir: float) -> Table:
    return Table(title="BER family per cell (divergence-eligible base)", columns=CELL_COLUMNS,
                 rows=[_cell_row(c) for c in cells],
                 note=f"Wilson 95% intervals per cell. Trap: |DNI| < {trap_dni} while IR >= {trap_ir}. Pareto: "
                      "no other cell has both lower BER_union and fewer output tokens. Rerouting: BER_sel falls vs "
                      "the baseline cell while BER_elab does not.")


def reliability_map(cells: Sequence[CellBER], baseline: Mapping[str, str], trap_dni: float) -> PlotSpec:
    return PlotSpec(kind="reliability_map", title="(IR, DNI) reliability map per cell", xlabel="IR (disagreement)",
                    ylabel="DNI (direction)", labels=[short_label(c.levels, baseline) for c in cells],
                    points=[[c.ir, c.dni, c.sel] for c in cells], reference=trap_dni,
                    alt="Each prompt condition placed by its inconsistency rate and net imbalance; shaded: reliable "
                        "(IR < 0.10), over-estimation (DNI > 0), under-estimation (DNI < 0), and the cancellation-trap band.")


def level_plot(f: FactorSpread) -> PlotSpec:
    return PlotSpec(kind="interval_bars", title=f"BER_union by {f.name} level (95%)", xlabel=f.name,
                    ylabel="BER_union", labels=list(f.levels), estimates=list(f.estimates),
                    alt=f"Endorsement rate on either layer for each level of {f.name}.")


def spread_table(factors: Sequence[FactorSpread]) -> Table:
    return Table(title="Horizontal spread per factor",
                 columns=["factor", "levels", "range of BER_union", "eta^2 (one-way)", "responses"],
                 rows=[[f.name, len(f.levels), f.range, f.eta, f.responses] for f in factors],
                 note="On OAT designs each factor is read within its own sweep (the other factors at baseline).")


def contrast_tables(factors: Sequence[FactorSpread]) -> list[Table]:
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


def quality_table(q: DataQuality) -> Table:
    return Table(title="Data quality", columns=["quantity", "value"], rows=[
        ["responses", q.responses], ["divergence-eligible", q.eligible],
        ["selection by rules", q.rules],
        ["selection by the LLM parser (fallback)", q.parser], ["selection unparsed (Abstain)", q.unparsed],
        ["no selection layer (free-text tasks, A = 0)", q.no_selection],
        ["elaboration Abstain (no judge majority)", q.elaboration_abstain],
        ["refusals (selection R)", q.refusals]])
