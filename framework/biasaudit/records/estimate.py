"""The one estimate record every metric, threshold and report uses."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer


class Subset(BaseModel):
    """Which of its metric's items (`MetricResult.items`) an estimate is computed from,
    when not all of them: the items whose stimulus field is one of the listed values (as
    text, `str()` of the field, as `stats.disaggregate.by_group` splits them) for every
    field of `where`, and whose cell has one of the listed levels for every factor of
    `levels`. A per-cell estimate is restricted to its cell as well. Set where the estimate
    is made (the breakdown helpers, a method's own subsets), so a reader (the viewer's
    "responses" link) never has to guess it from the estimate's name."""

    model_config = ConfigDict(frozen=True)
    where: dict[str, list[str]] = Field(default_factory=dict)
    """Stimulus field -> the values an item's field must take (a group: one; a contrast: two)."""
    levels: dict[str, list[str]] = Field(default_factory=dict)
    """Design factor -> the levels an item's cell must have."""
    stimuli: list[str] | None = None
    """When set, only the items of these stimuli (a group no field names, e.g. BBQ's
    examples whose right answer is the biased one)."""
    any_of: list[dict[str, str]] = Field(default_factory=list)
    """When not empty, an item must also match one of these stimulus field -> value
    combinations (an impact ratio's two groups of an intersection: `gender+race`
    man+Black against woman+White)."""

    def within(self, other: Subset | None) -> Subset:
        """This subset further restricted by `other` (a field in both: the values in both)."""
        if other is None:
            return self

        def meet(a: dict[str, list[str]], b: dict[str, list[str]]) -> dict[str, list[str]]:
            out = dict(a)
            for k, v in b.items():
                out[k] = [x for x in out[k] if x in v] if k in out else list(v)
            return out

        if self.any_of and other.any_of:  # the combinations both allow
            both = [{**a, **b} for a in self.any_of for b in other.any_of
                    if all(a[k] == b[k] for k in a.keys() & b.keys())]
        else:
            both = list(self.any_of or other.any_of)
        ids = self.stimuli if other.stimuli is None else other.stimuli if self.stimuli is None \
            else [x for x in self.stimuli if x in set(other.stimuli)]
        return Subset(where=meet(self.where, other.where), levels=meet(self.levels, other.levels), any_of=both,
                      stimuli=ids)


class GroupRef(BaseModel):
    """Which group of a breakdown an estimate is about, set where the estimate is made (the
    breakdown helpers, a method's own groups), so a reader (estimates.csv's `group`
    column, the viewer) reads it here and never parses it back out of the estimate's name
    (a level may hold dots: "St. Louis", "v1.2"). Unlike `Subset` it names the group the
    number is about, not every item it rests on: an impact ratio's subset holds the
    reference group's items too."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    factor: str
    """The stimulus field or design factor the groups are of; an intersection of fields:
    their names joined by `+` (`gender+race`)."""
    levels: list[str]
    """The group (one level; of an intersection, its levels joined by `+`: `woman+Black`),
    or a contrast's two groups `[a, b]` (the estimate is a - b)."""
    reference: str | None = None
    """The group a ratio divides by (an impact ratio's most favoured group)."""

    @property
    def label(self) -> str:
        """`<factor>=<group>`, `<factor>=<a>-<b>` for a contrast (estimates.csv's `group`)."""
        return f"{self.factor}={'-'.join(self.levels)}"


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
    subset: Subset | None = None
    """The items of its metric it is computed from, when not all (a group, a contrast's two
    groups, a design factor's level); None: every item of the metric (of its cell, for a
    per-cell estimate). Written only as a metric's own estimate (`MetricResult.estimates`
    and `.cells` in summary.json, when set): a copy in a plot, a table or a method's detail
    record is the number alone, as it always was."""

    group: GroupRef | None = None
    """The group (or a contrast's two groups) of a breakdown the estimate is about; None
    for an estimate of no one group (a pooled value, `lowest`, a spread). Written, like
    `subset`, only as a metric's own estimate."""

    @model_serializer(mode="wrap")
    def _without_subset(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if isinstance(out, dict):
            out.pop("subset", None)
            out.pop("group", None)
        return out

    def of(self, group: GroupRef | None) -> Estimate:
        """The same estimate, recorded as about `group` of a breakdown."""
        return self if group is None else self.model_copy(update={"group": group})

    def over(self, subset: Subset | None) -> Estimate:
        """The same estimate, recorded as computed from `subset` of the items (restricting
        the subset it already has)."""
        if subset is None:
            return self
        return self.model_copy(update={"subset": subset if self.subset is None else self.subset.within(subset)})

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
