"""Scoring outputs read for people: a sequence-logprob / pseudo-log-likelihood response as
its sentences, the scores the run's metric gives them and which one won; a next-token or
choice distribution as its options, most probable first.

What a card holds is the method's knowledge: a metric that compares scored sentences
registers a `CardDef` (`MetricDef.card`, metrics/card.py) saying which slots one card
holds and how each is scored. This module only groups the embedded responses by unit,
asks each metric of the run for its card, and gives a response no card reads the generic
one (`card.alone`: every token with a log-prob summed, said so).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from biasaudit.metrics.card import (
    TOKEN_CHARS,
    CardDef,
    ScoredText,
    ViewScoring,
    alone,
    decode_token,
)
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.responses import (
    ChoiceOutput,
    ClassifyOutput,
    NextTokenOutput,
    NLIOutput,
)
from biasaudit.registry import METRICS
from biasaudit.report.answers import clip
from biasaudit.report.viewer.model import ViewOption

MAX_OPTIONS = 20
"""Most options of a distribution the page shows."""
SCORED_KINDS = frozenset({"sequence_logprob", "pseudo_loglik"})


@dataclass
class Scored:
    """One embedded row's scored output, kept while its group is looked for."""

    row: int
    unit: tuple[str, str, int, int]
    """(cell, stimulus, variant, sample)."""
    sentence: ScoredText


Rule = tuple[str, BaseModel, CardDef]
"""A metric of the run with a card: its id, its parameters and its card."""


def card_metrics(metrics: Mapping[str, MetricResult]) -> list[Rule]:
    """The run's metrics that register a card, with their parameters (a metric whose
    package is not installed, or whose parameters no longer validate, has none)."""
    found: list[Rule] = []
    for mid, r in metrics.items():
        if r.name not in METRICS:
            continue
        mdef = METRICS.get(r.name)
        if mdef.card is None:
            continue
        try:
            found.append((mid, mdef.params.model_validate(r.params), mdef.card))
        except ValidationError:
            continue
    return found


def scorings(scored: Sequence[Scored], metrics: Sequence[Rule],
             fields: Mapping[str, Mapping[str, Any]]) -> dict[int, ViewScoring]:
    """Row index -> its card: the sentences a metric's card compares, each scored as that
    metric scores it (the first metric whose card holds the row's slot); a response in no
    such group alone. `fields`: stimulus id -> its fields."""
    by_unit: dict[tuple[str, str, int, int], dict[str, ScoredText]] = {}
    for s in scored:
        by_unit.setdefault(s.unit, {})[s.sentence.slot] = s.sentence
    out: dict[int, ViewScoring] = {}
    for s in scored:
        have = by_unit[s.unit]
        found = next(((mid, p, c, list(c.slots(p))) for mid, p, c in metrics if s.sentence.slot in c.slots(p)), None)
        if found is None:
            out[s.row] = alone(s.sentence, "")
            continue
        mid, p, card, slots = found
        missing = [x for x in slots if x not in have]
        if missing:
            out[s.row] = alone(s.sentence, f"the {', '.join(map(repr, missing))} sentence of this group is not "
                                           "embedded (failed, or cut by --max-rows)")
            continue
        out[s.row] = card.build(mid, p, [have[x] for x in slots], fields.get(s.unit[1], {}))
    return out


def options(kind: str, raw: Mapping[str, object]) -> list[ViewOption]:
    """A distribution's options, most probable first (at most `MAX_OPTIONS`); empty when
    the output is not one."""
    opts: list[ViewOption] = []
    try:
        if kind == "next_token":
            nt = NextTokenOutput.model_validate(raw)
            opts = [ViewOption(option=clip(decode_token(t), TOKEN_CHARS), logprob=_fin(lp), prob=_fin(math.exp(lp)))
                    for t, lp in nt.top]
        elif kind in ("choice", "classify", "classify_nli"):
            tp: type[ChoiceOutput | ClassifyOutput | NLIOutput] = (
                ChoiceOutput if kind == "choice" else ClassifyOutput if kind == "classify" else NLIOutput)
            rec = tp.model_validate(raw)
            lps: Mapping[str, float | None] = getattr(rec, "logprobs", None) or getattr(rec, "label_logprobs", {})
            opts = [ViewOption(option=clip(str(k), TOKEN_CHARS), prob=_fin(v), logprob=_fin(lps.get(str(k))))
                    for k, v in rec.probs.items()]
    except (ValidationError, OverflowError, TypeError, ValueError):
        return []
    opts.sort(key=lambda o: -(o.prob if o.prob is not None else -1.0))
    return opts[:MAX_OPTIONS]


def _fin(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


__all__ = ["SCORED_KINDS", "Scored", "card_metrics", "options", "scorings"]
