"""What a run with a budget (`runtime.budget`) records about its spend: the limits, the
tokens and money spent on the model under test (cumulative over the cache: a resumed
run counts the answers earlier runs paid for), and, when it stopped at the budget, the
stimuli it did not run. Data only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class BudgetRecord(BaseModel):
    model_config = ConfigDict(frozen=True)
    money: float | None = None
    """The money limit (in `currency`), as set."""
    tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    currency: str | None = None
    """`model.price`'s currency (None: no price stated)."""
    spent_input_tokens: int = 0
    """Input tokens of the plan's answers: reported by the provider, else the plan's
    estimate (characters / 4), as the cover counts them."""
    spent_output_tokens: int = 0
    spent_money: float | None = None
    """Their cost at `model.price` (None: no price stated)."""
    stopped: bool = False
    """True: the run stopped before a call would have passed a limit (`stopped: budget`)."""
    limit: str = ""
    """With `stopped`: the limit that stopped it (`runtime.budget.money`, ...)."""
    calls_not_made: int = 0
    """Requests left unsent when the run stopped."""
    planned: int = 0
    """Stimuli in the plan."""
    run: int = 0
    """Stimuli answered in full (measured; the rest are not run)."""
    not_run_ids: list[str] = Field(default_factory=list)
    text: str = ""
    """The cover's line: the spend against the limits and, when stopped, what was not run."""


__all__ = ["BudgetRecord"]
