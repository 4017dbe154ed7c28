"""What a run with sequential stopping (`runtime.sequential`) records about its looks:
at each look the stimuli seen, and per threshold the estimate, its repeated confidence
interval at the look's nominal level, and the decision; where the run stopped and why.
Data only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LookThreshold(BaseModel):
    """One threshold at one look."""

    model_config = ConfigDict(frozen=True)
    threshold: str
    """The threshold as the report names it (`metric`, `over`, bounds)."""
    value: float | None
    ci_low: float | None
    """The repeated confidence interval at `level` (None: no interval, or a look that
    spends no error rate and so cannot decide)."""
    ci_high: float | None
    level: float
    """Nominal level of this look's interval (from the spending function, with a
    threshold's `adjust` on top; 1: the look spends no error rate and cannot decide)."""
    spent: float
    """The error rate spent up to and including this look (of the estimate's alpha)."""
    n: int
    verdict: str
    """PASS / FAIL when this look's interval decides, INCONCLUSIVE otherwise."""
    reason: str
    decided_here: bool = False
    """This look is where the threshold's verdict was decided (and then kept)."""
    cell: str | None = None


class Look(BaseModel):
    model_config = ConfigDict(frozen=True)
    index: int
    """1-based."""
    stimuli: int
    """Stimuli seen at this look (in the run's seeded order)."""
    fraction: float
    """Information fraction: stimuli seen / stimuli planned."""
    thresholds: list[LookThreshold] = Field(default_factory=list)


class SequentialRecord(BaseModel):
    """The sequential-stopping section of a run's summary."""

    model_config = ConfigDict(frozen=True)
    look_every: int
    spending: str
    planned_looks: list[int]
    """Stimulus counts of every planned look (the last is the planned number)."""
    planned: int
    """Stimuli the run would take without stopping early."""
    run: int
    """Stimuli whose model calls were made (or read from the cache)."""
    not_run: int
    """Stimuli left out because the run stopped early: not run, not failures."""
    not_run_ids: list[str] = Field(default_factory=list)
    """Their ids, in the run's order."""
    order_seed: int
    """Seed of the stimulus order (`runtime.seed`)."""
    looks: list[Look] = Field(default_factory=list)
    stopped_at: int
    """The 1-based look where the run stopped."""
    stopped_early: bool
    reason: str
    """Why the run stopped where it did."""


__all__ = ["Look", "LookThreshold", "SequentialRecord"]
