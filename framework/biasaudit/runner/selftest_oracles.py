"""The self-test's oracle runs and its rows, shared by the oracle rows (selftest.py), the
content rows (selftest_content.py) and the label-word rows (selftest_words.py): the
plan's requests answered as an oracle would, the coding answered by a perfect judge,
measured and judged by the spec's own metrics and thresholds."""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from biasaudit.coding.base import CodingRequest
from biasaudit.coding.stage import run_coding
from biasaudit.coding.units import units_of
from biasaudit.methods.oracle_kit import (
    CONTENT_KINDS,
    REFUSAL_TEXT,
    OracleCase,
    OracleDef,
    balanced_sides,
    generated,
    stratified_sides,
)
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.responses import Response, generated_text
from biasaudit.records.verdict import VerdictRecord
from biasaudit.runner.pipeline import Coded, Prepared, measure
from biasaudit.verdicts.thresholds import evaluate

Meanings = dict[str, dict[str, Counter[str]]]
"""Coding layer -> what an answer meant (by the oracle's content) -> the labels the layer gave it."""


def add_meanings(acc: Meanings, oracle: OracleDef, texts: Mapping[str, str], coded: Coded) -> None:
    """The labels each layer gave the oracle's answers, by what the answers meant."""
    if oracle.meaning is None:
        return
    for layer, codes in coded.result.codes.items():
        for unit, c in codes.items():
            meant = oracle.meaning(texts.get(unit, ""))
            if meant is not None and c.coded and c.label:
                acc.setdefault(layer, {}).setdefault(meant, Counter())[c.label] += 1


@dataclass(frozen=True)
class Row:
    oracle: str
    threshold: str
    expected: str
    got: str
    ok: bool
    truth: float | None
    estimate: str
    reason: str


@dataclass
class SelfTestResult:
    spec: str
    rows: list[Row] = field(default_factory=list)
    detected: bool = False
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.detected and not self.problems and all(r.ok for r in self.rows)


def oracle_responses(prep: Prepared, oracle: OracleDef, params: Any, kind: str,
                     planted: frozenset[str] = frozenset()) -> dict[str, Response]:
    """Every plan request answered as the oracle `kind` would (`gap`: the permutation
    row's oracle, planting on the requests that name one of the `planted` texts)."""
    cfg = prep.composed.config
    fields = {s.id: s.fields for s in prep.stimuli.stimuli}
    sides = (stratified_sides(fields, oracle.strata, cfg.runtime.seed) if oracle.strata is not None
             else balanced_sides(list(fields), cfg.runtime.seed))
    level_vars = {u.cell: u.vars for u in units_of(prep)}  # the cells' level variables, as coders see them
    out: dict[str, Response] = {}
    for it in prep.plan.items:
        if it.key in out:
            continue
        req = prep.plan.requests[it.key]
        if kind == "refuse":
            out[it.key] = (Response(key=it.key, status="ok", output=generated(REFUSAL_TEXT)) if req.kind == "generate"
                           else Response(key=it.key, status="failed", error="the self-test's refuse-all oracle",
                                         error_kind="refused"))
            continue
        respond = (oracle.content if kind in CONTENT_KINDS and oracle.content is not None else
                   oracle.gap if kind == "gap" and oracle.gap is not None else oracle.respond)
        got = respond(OracleCase(kind=kind, item=it, request=req, fields=fields[it.stimulus],
                                 vars=level_vars.get(it.cell, {}), params=params, side=sides[it.stimulus],
                                 stimuli=fields, planted=planted))
        out[it.key] = (Response(key=it.key, status="ok", output=got) if got is not None
                       else Response(key=it.key, status="failed", error="no oracle answer", error_kind="oracle"))
    return out


@dataclass
class OracleAnswerer:
    """Answers coding requests as a perfect judge of the oracle's answers would."""

    oracle: OracleDef
    kind: str
    intents: Mapping[str, str]

    def __call__(self, layer: str, wanted: list[CodingRequest]) -> dict[CodingRequest, Response]:
        out: dict[CodingRequest, Response] = {}
        for r in wanted:
            got = self.oracle.code(self.kind, r, self.intents) if self.oracle.code else None
            out[r] = (Response(key="oracle", status="ok", output=got) if got is not None
                      else Response(key="oracle", status="failed", error="the self-test has no judge for this request"))
        return out


def truth_of(oracle: OracleDef, kind: str, params: Any, res: MetricResult, name: str,
           prep: Prepared | None = None) -> float | None:
    planned = oracle.plan_truth(kind, params, prep) if oracle.plan_truth is not None and prep is not None else {}
    for pat, value in [*planned.items(), *oracle.truth(kind, params).items()]:
        if (name == res.headline) if pat == "" else fnmatch.fnmatchcase(name, pat):
            return value
    return None


def run_oracle(prep: Prepared, oracle: OracleDef, params: Any, kind: str,
               accept_dominant: frozenset[str] = frozenset(), meanings: Meanings | None = None,
               planted: frozenset[str] = frozenset()) -> tuple[dict[str, MetricResult], list[VerdictRecord], Coded]:
    responses = oracle_responses(prep, oracle, params, kind, planted)
    if prep.coding.layers:
        units = units_of(prep)
        texts = {u.id: generated_text(responses[u.key]) or "" for u in units if u.key in responses}
        intents = {t: kind for t in texts.values()}
        result = run_coding(prep.coding, units, responses, OracleAnswerer(oracle, kind, intents))
        coded = Coded(result, {})
        if meanings is not None:
            add_meanings(meanings, oracle, texts, coded)
    else:
        from biasaudit.coding.stage import CodingResult

        coded = Coded(CodingResult(codes={}, units=[]), {})
    results = measure(prep, responses, coded, calibration=False, accept_dominant=accept_dominant)
    return results, evaluate(prep.composed.config.thresholds, results), coded



__all__ = ["Meanings", "OracleAnswerer", "Row", "SelfTestResult", "add_meanings", "oracle_responses", "run_oracle",
           "truth_of"]
