"""A run's budget (`runtime.budget`): before a request is sent, its worst-case cost is
reserved (the plan's estimate: characters / 4 in, `max_tokens` out, as `biasaudit plan`
counts it); when its answer arrives the reservation is settled at the usage the provider
reported (at the estimate where it reported none). A request whose reservation would take
the spend past a limit is not sent, and the run stops there.

The engine sends the requests in windows of at most `window` (the model's concurrency,
or a local model's batch size), each reserved in full before it goes. So the spend passes
a limit only when answers report more tokens than their reservation (a prompt that
tokenizes to more than characters / 4), and then by at most one window's excess: the
next window is reserved against the settled spend and does not go.

The spend counts every answer of the plan already in the cache (a resumed run continues
counting what earlier runs paid for, with no file of its own to lose); a failed call
counts nothing (providers bill answers, not errors)."""

from __future__ import annotations

from biasaudit.plan import Request, estimated_tokens
from biasaudit.records.budget import BudgetRecord
from biasaudit.records.responses import Response, reported_usage
from biasaudit.spec import BudgetConfig
from biasaudit.spec.model_configs import ModelPrice, fmt_money


def answer_tokens(req: Request, resp: Response) -> tuple[int, int]:
    """(input, output) tokens an answer spent: as the provider reported them, else the
    plan's estimate (the same count as the report's cover); a failed call: none."""
    if not resp.ok:
        return 0, 0
    usage = reported_usage(resp)
    if usage is None:
        return estimated_tokens(req)
    return usage.input_tokens, usage.output_tokens


class Budget:
    """The spend of one run against its limits (settled answers plus reservations of the
    requests in flight)."""

    def __init__(self, limits: BudgetConfig, price: ModelPrice | None, window: int) -> None:
        self.limits = limits
        self.price = price
        self.window = max(1, window)
        self.spent = [0, 0]
        self.reserved = [0, 0]
        self._held: dict[str, tuple[int, int]] = {}
        self.stopped_by = ""
        self.calls_not_made = 0
        self.batch_price = False
        """The answers come through the provider's batch API: money at `price.batch_discount`."""

    def money(self, tin: float, tout: float) -> float | None:
        if self.price is None:
            return None
        discount = self.price.batch_discount if self.batch_price and self.price.batch_discount is not None else 1.0
        return self.price.cost(tin, tout) * discount

    def _passes(self, tin: int, tout: int) -> str:
        """The first limit that `tin` / `tout` tokens in all would pass ('' for none)."""
        lim = self.limits
        money = self.money(tin, tout)
        if lim.money is not None and money is not None and money > lim.money:
            return "runtime.budget.money"
        if lim.tokens is not None and tin + tout > lim.tokens:
            return "runtime.budget.tokens"
        if lim.input_tokens is not None and tin > lim.input_tokens:
            return "runtime.budget.input_tokens"
        if lim.output_tokens is not None and tout > lim.output_tokens:
            return "runtime.budget.output_tokens"
        return ""

    def count_stored(self, req: Request, resp: Response) -> None:
        """An answer already in the cache (an earlier run of this plan paid for it)."""
        tin, tout = answer_tokens(req, resp)
        self.spent[0] += tin
        self.spent[1] += tout

    def reserve(self, req: Request, force: bool = False) -> bool:
        """Reserve `req`'s worst case; False (and nothing reserved) if it would pass a limit.
        `force`: reserve it whatever the limit (a request already submitted in a batch)."""
        tin, tout = estimated_tokens(req)
        over = self._passes(self.spent[0] + self.reserved[0] + tin, self.spent[1] + self.reserved[1] + tout)
        if over and not force:
            self.stopped_by = over
            return False
        self.reserved[0] += tin
        self.reserved[1] += tout
        self._held[req.key] = (tin, tout)
        return True

    def settle(self, req: Request, resp: Response) -> None:
        """Replace `req`'s reservation by what its answer spent."""
        tin, tout = self._held.pop(req.key, (0, 0))
        self.reserved[0] -= tin
        self.reserved[1] -= tout
        self.count_stored(req, resp)

    def release(self) -> None:
        """Drop the reservations of requests that never answered (an interrupted window)."""
        self._held.clear()
        self.reserved = [0, 0]

    def stop(self, left: int) -> None:
        self.calls_not_made = left

    @property
    def stopped(self) -> bool:
        return self.calls_not_made > 0

    def record(self, planned: int = 0, run: int = 0, not_run_ids: list[str] | None = None) -> BudgetRecord:
        """What the run spent, against the limits, for the manifest, summary and cover."""
        lim = self.limits
        tin, tout = self.spent
        money = self.money(tin, tout)
        currency = None if self.price is None else self.price.currency
        text = f"{tin:,} input and {tout:,} output tokens"
        if money is not None and currency is not None:
            text += f", {fmt_money(money, currency)}"
        caps = [f"{fmt_money(lim.money, currency or '')} money" if lim.money is not None else "",
                f"{lim.tokens:,} tokens" if lim.tokens is not None else "",
                f"{lim.input_tokens:,} input tokens" if lim.input_tokens is not None else "",
                f"{lim.output_tokens:,} output tokens" if lim.output_tokens is not None else ""]
        text += f" spent of a budget of {', '.join(c for c in caps if c)}"
        if self.stopped:
            text = (f"stopped: budget ({self.stopped_by}): {text}; {self.calls_not_made} calls not made, "
                    f"{run} of {planned} stimuli run (verdicts INCONCLUSIVE); resume with a higher budget")
        return BudgetRecord(money=lim.money, tokens=lim.tokens, input_tokens=lim.input_tokens,
                            output_tokens=lim.output_tokens, currency=currency, spent_input_tokens=tin,
                            spent_output_tokens=tout, spent_money=money, stopped=self.stopped,
                            limit=self.stopped_by if self.stopped else "", calls_not_made=self.calls_not_made,
                            planned=planned, run=run, not_run_ids=list(not_run_ids or []), text=text)


__all__ = ["Budget", "answer_tokens"]
