"""Coding calls counted before a run (`biasaudit plan`), apart from the subject calls.

Before any response exists a layer's calls are known only as bounds (a judge panel of 3
asks at most 3 questions per answer; identical questions are asked once; a fallback asks
only about what its primary could not code). When every subject response is already in
the store, the coding stage is planned for real against the store without calling
anything: exact counts of the coding requests and of those already cached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from biasaudit.coding.base import CodingRequest
from biasaudit.coding.layers import CodingPlan
from biasaudit.coding.stage import run_coding
from biasaudit.records.codes import Unit
from biasaudit.records.responses import Response


@dataclass
class LayerEstimate:
    layer: str
    coder: str
    calls: int | None
    """Coding requests (None: unknown before the responses exist)."""
    bound: str
    """`exact`, `at most`, `at least` or `unknown`."""
    cached: int | None = None
    """Requests already answered in the store (exact counts only)."""
    note: str = ""
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def needed(self) -> int | None:
        return None if self.calls is None else self.calls - (self.cached or 0)


def bounds(plan: CodingPlan, n_units: int) -> list[LayerEstimate]:
    """Calls per layer for `n_units` answered units, from each coder's own estimate."""
    out = []
    for name, lay in plan.layers.items():
        e = lay.coder_def.estimate(lay.env, lay.options, n_units)
        bound = e.bound if lay.fallback_of is None or e.calls in (None, 0) else "at most"
        note = e.note + (f"; only units {lay.fallback_of} cannot code" if lay.fallback_of else "")
        out.append(LayerEstimate(layer=name, coder=lay.coder_name, calls=e.calls, bound=bound, note=note.strip("; "),
                                 input_tokens=e.input_tokens, output_tokens=e.output_tokens))
    return out


@dataclass
class _DryAnswerer:
    """Answers from the store only; a missing answer is counted and given as a failure
    (so a multi-step coder's later rounds are counted as a lower bound)."""

    lookup: Callable[[str, list[CodingRequest]], dict[CodingRequest, Response]]
    rounds: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    """Layer -> (requests, cached) per round it asked in."""

    def __call__(self, layer: str, wanted: list[CodingRequest]) -> dict[CodingRequest, Response]:
        found = self.lookup(layer, wanted)
        self.rounds.setdefault(layer, []).append((len(wanted), len(found)))
        missing = Response(key="", status="failed", error="not yet answered")
        return {r: found.get(r, missing) for r in wanted}


def exact(plan: CodingPlan, units: Sequence[Unit], responses: Mapping[str, Response],
          lookup: Callable[[str, list[CodingRequest]], dict[CodingRequest, Response]]) -> list[LayerEstimate]:
    """Plan the coding stage against the store: `lookup` gives the cached answers of a
    layer's requests and calls nothing."""
    dry = _DryAnswerer(lookup)
    run_coding(plan, units, responses, dry)
    out = []
    for name, lay in plan.layers.items():
        rounds = dry.rounds.get(name, [])
        # a round asked after an unanswered one was planned from stand-in failures
        guessed = any(n > found for n, found in rounds[:-1])
        out.append(LayerEstimate(layer=name, coder=lay.coder_name, calls=None if guessed else sum(n for n, _ in rounds),
                                 cached=sum(found for _, found in rounds), bound="unknown" if guessed else "exact",
                                 note="later steps depend on answers not yet in the store" if guessed else ""))
    return out


__all__ = ["LayerEstimate", "bounds", "exact"]
