"""BiAxisAudit's own intermediate values, kept in `MetricResult.detail` for its report
section: each cell's BER rates with its mitigation flags, each factor's levels, one-way
eta^2 and level contrasts, the two-way effects and the interaction means of a factorial
design, the judges' agreement and the coding counts that `counts` does not hold. The
pooled and per-cell estimates, the level estimates and the factor ranges are in the
estimates."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.effects import TwoWayEta


class CellRow(BaseModel):
    """One prompt condition: its BER family on the eligible base, and the mitigation view
    (its intervals are the per-cell estimates, `MetricResult.cells`)."""

    model_config = ConfigDict(frozen=True)
    cell: str
    levels: dict[str, str]
    n: int
    """Eligible responses."""
    sel: float
    elab: float
    cor: float
    union: float
    oed: float
    ued: float
    ir: float
    dni: float
    ir_over_union: float | None
    trap: bool
    """The cancellation trap: |DNI| small while IR is not."""
    tokens: float
    """Mean output tokens over every response of the cell (eligible or not)."""
    pareto: bool
    """No other cell is at least as good on both BER_union and tokens and better on one."""
    reroute: bool
    """BER_sel falls by `reroute_drop` vs the baseline cell while BER_elab does not."""


class FactorDetail(BaseModel):
    """BER_union over one factor's levels (each `union.<factor>.<level>`; the range is
    `spread.<factor>.range`)."""

    model_config = ConfigDict(frozen=True)
    name: str
    levels: list[str]
    """The levels with responses, in spec order."""
    eta: float | None
    responses: int
    contrasts: ContrastFamily | None = None
    """Every pair of levels: independent groups and paired within statements."""


class Interaction(BaseModel):
    """Mean BER_union over the levels of `factor_a`, one series per level of `factor_b`."""

    model_config = ConfigDict(frozen=True)
    factor_a: str
    factor_b: str
    levels_a: list[str]
    series: dict[str, list[float | None]]


class JudgeAgreement(BaseModel):
    """Raw agreement and Cohen's kappa of a pair of judges, or the panel's Fleiss kappa."""

    model_config = ConfigDict(frozen=True)
    judges: str
    """`<a> vs <b>`, or the panel."""
    responses: int
    agreement: float | None
    kappa: float | None


class CodingCounts(BaseModel):
    """How the responses were coded, beside `counts` (responses, eligible,
    parser_fallbacks, unparsed)."""

    model_config = ConfigDict(frozen=True)
    rules: int = 0
    no_selection: int = 0
    elaboration_abstain: int = 0
    refusals: int = 0


class BiaxisDetail(BaseModel):
    """`MetricResult.detail` of `biaxis`."""

    model_config = ConfigDict(frozen=True)
    cells: list[CellRow] = Field(default_factory=list)
    """The cells with eligible responses, in plan order."""
    factors: list[FactorDetail] = Field(default_factory=list)
    two_way: list[TwoWayEta] | None = None
    """Every pair of factors (None: not a factorial design)."""
    interaction: Interaction | None = None
    """The task x sentiment interaction of a factorial design with those factors."""
    judges: list[JudgeAgreement] = Field(default_factory=list)
    """Each pair of judges, then the panel (empty: fewer than two judges)."""
    coding: CodingCounts = Field(default_factory=CodingCounts)


__all__ = ["BiaxisDetail", "CellRow", "CodingCounts", "FactorDetail", "Interaction", "JudgeAgreement"]
