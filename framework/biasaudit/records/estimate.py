"""The one estimate record every metric, threshold and report uses."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field


class Estimate(BaseModel):
    """A number with its interval: `value` in [`ci_low`, `ci_high`] at `level`."""

    model_config = ConfigDict(frozen=True)
    value: float | None
    """Point estimate; None only when there is no data (`n == 0`)."""
    ci_low: float | None
    ci_high: float | None
    n: int
    """Number of independent units the estimate rests on: the stimuli when it pools
    several rows per stimulus (then `rows` counts the rows and `cells` the prompt
    conditions), else the pairs, responses... themselves."""
    method: str
    """How the interval was made, e.g. `wilson`, `t`, `bootstrap-bca`, `none`."""
    level: float = 0.95
    note: str = ""
    clusters: int | None = None
    """Stimuli the estimate rests on, when it pools several rows per stimulus (then `n`
    counts rows and the interval resamples stimuli)."""
    cells: int | None = None
    """Prompt conditions (cells) the estimate pools over."""
    rows: int | None = None
    """Rows (stimulus x condition x sample) behind a pooled estimate, when it differs from `n`."""
    groups: dict[str, Estimate] = Field(default_factory=dict)
    """Optional per-group breakdown (e.g. by category)."""
    tost_interval: tuple[float, float] | None = Field(default=None, exclude=True)
    """The interval at level 1 - 2 alpha (alpha = 1 - `level`: 0.90 beside a 95% interval),
    made by the same method from the same data (the same resamples for a bootstrap), for
    equivalence (TOST) thresholds. Kept in memory only: the verdict that uses it records it,
    so summary.json's estimates stay as they were."""

    @classmethod
    def no_data(cls, method: str, note: str = "no data") -> Estimate:
        return cls(value=None, ci_low=None, ci_high=None, n=0, method=method, note=note)

    @property
    def has_data(self) -> bool:
        return self.value is not None and self.n > 0

    @property
    def tost_level(self) -> float:
        """1 - 2 alpha: the level of `tost_interval`."""
        return round(2 * self.level - 1, 12)  # 0.9, not 0.8999999999999999

    @property
    def half_width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2

    def scaled(self, factor: float) -> Estimate:
        def s(x: float | None) -> float | None:
            return None if x is None else x * factor

        return self.model_copy(
            update={"value": s(self.value), "ci_low": s(self.ci_low), "ci_high": s(self.ci_high),
                    "groups": {k: g.scaled(factor) for k, g in self.groups.items()},
                    "tost_interval": None if self.tost_interval is None
                    else (self.tost_interval[0] * factor, self.tost_interval[1] * factor)}
        )

    def fmt(self, digits: int = 3) -> str:
        if not self.has_data:
            return f"n/a ({self.note or 'no data'})"
        assert self.value is not None
        if self.ci_low is None or self.ci_high is None or math.isnan(self.ci_low):
            return f"{self.value:.{digits}f} (n={self.n})"
        return f"{self.value:.{digits}f} [{self.ci_low:.{digits}f}, {self.ci_high:.{digits}f}] (n={self.n})"


class Spread(BaseModel):
    model_config = ConfigDict(frozen=True)
    range: Estimate
    """max - min of the cell means, with a 95% cluster-bootstrap (percentile) interval."""
    eta2: float | None
    """One-way eta^2 of the unit values on the cell (share of variance the condition explains)."""
    n_cells: int
    min_cell: str
    max_cell: str
