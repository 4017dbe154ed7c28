"""Prompts built from named segments, so that two prompts made of the same pieces in
different orders can be aligned token by token (pivotal-token perplexity, docs/methods/pivotal_perplexity.md).

A frame has two clauses, each with one `{s}` slot for a sentence, e.g.
`This is a grammatical sentence: '{s}'.`. `frame_prompt` is exposed to spec templates;
`frame_segments` gives the same text with every segment's character span.
"""

from __future__ import annotations

from dataclasses import dataclass

SLOT = "{s}"
SEPARATOR = " "


@dataclass(frozen=True)
class Segment:
    id: str
    """`a.lead`, `a.tail`, `b.lead`, `b.tail`, `sep`, or `sentence:<which>`."""
    start: int
    end: int


def _split(clause: str, name: str) -> tuple[str, str]:
    if clause.count(SLOT) != 1:
        raise ValueError(f"frame clause {name} must contain the slot {SLOT} exactly once: {clause!r}")
    lead, tail = clause.split(SLOT)
    return lead, tail


def frame_segments(
    clause_a: str, clause_b: str, order: str, first: str, second: str,
    first_id: str = "a", second_id: str = "b",
) -> tuple[str, list[Segment]]:
    """The prompt with `first` in clause a's slot and `second` in clause b's, clauses in
    `order` (`ab` or `ba`), and the span of each segment."""
    if order not in ("ab", "ba"):
        raise ValueError(f"order must be 'ab' or 'ba', got {order!r}")
    la, ta = _split(clause_a, "a")
    lb, tb = _split(clause_b, "b")
    part_a = [("a.lead", la), (f"sentence:{first_id}", first), ("a.tail", ta)]
    part_b = [("b.lead", lb), (f"sentence:{second_id}", second), ("b.tail", tb)]
    pieces = [*part_a, ("sep", SEPARATOR), *part_b] if order == "ab" else [*part_b, ("sep", SEPARATOR), *part_a]
    text = ""
    segs = []
    for sid, piece in pieces:
        segs.append(Segment(id=sid, start=len(text), end=len(text) + len(piece)))
        text += piece
    return text, [s for s in segs if s.end > s.start]


def frame_prompt(clause_a: str, clause_b: str, order: str, first: str, second: str) -> str:
    """Template function: `{{ frame_prompt(clause_a, clause_b, order, a, b) }}`."""
    return frame_segments(clause_a, clause_b, order, first, second)[0]
