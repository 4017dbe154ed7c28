"""The shared batch loop of local backends: results as batches finish, failures recorded."""

from __future__ import annotations

from biasaudit.backends.base import run_in_batches
from biasaudit.plan import Request


def test_failed_batch_is_recorded_not_dropped() -> None:
    reqs = [Request(key=str(i), kind="sequence_logprob", text=str(i)) for i in range(5)]
    seen_batches = []

    def answer(batch: list[Request]) -> list[dict]:
        seen_batches.append([r.key for r in batch])
        if "2" in [r.key for r in batch]:
            raise RuntimeError("out of memory")
        return [{"n": int(r.key)} for r in batch]

    got = []
    run_in_batches(reqs, 2, answer, got.append)
    assert seen_batches == [["0", "1"], ["2", "3"], ["4"]]
    assert [(r.key, r.status) for r in got] == [("0", "ok"), ("1", "ok"), ("2", "failed"), ("3", "failed"), ("4", "ok")]
    assert got[2].error == "RuntimeError: out of memory" and got[4].output == {"n": 4}


def test_token_budget_batches_fill_the_budget_in_length_order() -> None:
    from biasaudit.backends.base import token_budget_batches
    from biasaudit.plan import Request

    reqs = [Request(key=str(i), kind="sequence_logprob", text=str(i)) for i in range(7)]
    lengths = [10, 3, 30, 3, 5, 12, 40]
    batches = token_budget_batches(reqs, lengths, budget=24)
    # sorted: 3,3,5,10,12,30,40 -> [3,3,5] (3 x 5 = 15; adding 10 would be 4 x 10 = 40),
    # [10,12] (2 x 12 = 24), [30] and [40] alone (each longer than the budget)
    assert [[r.key for r in b] for b in batches] == [["1", "3", "4"], ["0", "5"], ["2"], ["6"]]
    assert sorted(r.key for b in batches for r in b) == sorted(r.key for r in reqs)


def test_an_interrupt_stops_inside_one_forward_pass_at_the_next_layer() -> None:
    """A long forward pass (a batch's prefill) notices a stop request at the next module,
    through forward pre-hooks that are removed again afterwards."""
    import pytest
    import torch

    from biasaudit._util import interrupt
    from biasaudit.backends.base import stoppable

    seen: list[int] = []

    class Layer(torch.nn.Module):
        def __init__(self, i: int) -> None:
            super().__init__()
            self.i = i

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(self.i)
            if self.i == 2:
                interrupt.request()  # Ctrl-C arrives while layer 2 computes
            return x + 1

    model = torch.nn.Sequential(*[Layer(i) for i in range(6)])
    try:
        with stoppable(model), pytest.raises(KeyboardInterrupt):
            model(torch.zeros(1))
        assert seen == [0, 1, 2]  # layers 3-5 never ran
        assert float(model(torch.zeros(1))[0]) == 6  # the hooks are gone: a later call runs whole
    finally:
        interrupt.clear()
