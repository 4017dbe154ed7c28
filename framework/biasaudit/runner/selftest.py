"""`biasaudit selftest`: can this spec detect what it claims to measure?

The spec runs against oracle responders built from its own data, with no model (see
methods/oracle_kit.py): `planted` (always the stereotyped side), `null` (each side for
exactly half of the stimuli), `refuse` (every generation refused, every scoring request
failed) and `ties` (every alternative scored alike, or one constant answer). The real
coding layers, metrics, validity guards and thresholds run on those answers; coding
layers that ask a model are answered by a perfect judge where the method provides one.

Each oracle has an expected verdict per threshold, derived from the true value of the
estimate under that oracle (what a perfectly precise measurement would say):

- `planted` and `null`: FAIL expected where the true value lies outside the threshold's
  band, else PASS, for which INCONCLUSIVE is also accepted (a finite sample may not
  decide), never FAIL;
- `refuse` and `ties`: INCONCLUSIVE (nothing was measured), unless the method gives a
  true value for them (a refusal rate is 1 when every answer refuses).

The spec passes when every row is as expected and the planted bias is detected by at
least one threshold (a sanity threshold counts when the planted model passes it); a spec
whose thresholds cannot reach the planted value, or whose coding maps everything to one
label, fails and the table says where. The `null` oracle runs first: a layer that gives
the full label range there has shown it discriminates, so its dominance under `planted`
(one label for every unit, as a perfectly biased model would earn) is accepted.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from biasaudit.coding.base import CodingRequest
from biasaudit.coding.stage import run_coding
from biasaudit.coding.units import units_of
from biasaudit.errors import SpecError
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
from biasaudit.registry import ORACLES
from biasaudit.runner.pipeline import Coded, Prepared, measure, prepare
from biasaudit.runner.selftest_content import (
    Meanings,
    add_meanings,
    content_rows,
    counted_label_problems,
)
from biasaudit.spec import ThresholdSpec
from biasaudit.spec.compose import Composed
from biasaudit.verdicts.thresholds import VerdictRecord, evaluate

ORDER = ("null", "planted", "refuse", "ties")


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


def _oracle_for(prep: Prepared) -> tuple[OracleDef, Any]:
    cfg = prep.composed.config
    spec = str(prep.composed.spec_file)
    for m in cfg.metrics:
        if m.name in ORACLES.names():
            return ORACLES.get(m.name), prep.params[m.key]
    raise SpecError(f"no self-test oracle for the metrics of this spec ({', '.join(m.name for m in cfg.metrics)})",
                    file=spec, key="metrics", hint=f"self-tests exist for: {', '.join(ORACLES.names())}")


def oracle_responses(prep: Prepared, oracle: OracleDef, params: Any, kind: str) -> dict[str, Response]:
    """Every plan request answered as the oracle `kind` would."""
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
        respond = oracle.content if kind in CONTENT_KINDS and oracle.content is not None else oracle.respond
        got = respond(OracleCase(kind=kind, item=it, request=req, fields=fields[it.stimulus],
                                        vars=level_vars.get(it.cell, {}), params=params, side=sides[it.stimulus],
                                        stimuli=fields))
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


def _truth(oracle: OracleDef, kind: str, params: Any, res: MetricResult, name: str,
           prep: Prepared | None = None) -> float | None:
    planned = oracle.plan_truth(kind, params, prep) if oracle.plan_truth is not None and prep is not None else {}
    for pat, value in [*planned.items(), *oracle.truth(kind, params).items()]:
        if (name == res.headline) if pat == "" else fnmatch.fnmatchcase(name, pat):
            return value
    return None


def _expected(t: ThresholdSpec, truth: float | None) -> str:
    if truth is None:
        return "?"
    lo, hi = t.band  # (min, max), or an equivalence threshold's band
    inside = (lo is None or truth >= lo) and (hi is None or truth <= hi)
    return "PASS" if inside else "FAIL"


def _ok(kind: str, expected: str, got: str) -> bool:
    if kind in ("refuse", "ties"):
        return got == "INCONCLUSIVE"
    if expected == "FAIL":
        return got == "FAIL"
    return got != "FAIL"  # PASS expected (or no truth): INCONCLUSIVE accepted, FAIL never


def run_oracle(prep: Prepared, oracle: OracleDef, params: Any, kind: str,
               accept_dominant: frozenset[str] = frozenset(), meanings: Meanings | None = None,
               ) -> tuple[dict[str, MetricResult], list[VerdictRecord], Coded]:
    responses = oracle_responses(prep, oracle, params, kind)
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


def _add_answer_labels(answer_labels: dict[str, set[str]], coded: Coded) -> None:
    for name, codes in coded.result.codes.items():
        answer_labels.setdefault(name, set()).update(c.label for c in codes.values() if c.coded and c.label)


def _add_rows(out: SelfTestResult, prep: Prepared, oracle: OracleDef, params: Any, kind: str,
              results: dict[str, MetricResult], verdicts: list[VerdictRecord]) -> None:
    """One row per threshold under this oracle; a planted bias caught marks `out.detected`."""
    for t, v in zip(prep.composed.config.thresholds, verdicts, strict=True):
        res = next(r for k, r in results.items() if v.metric.partition(".")[0] == k)
        name = v.metric.partition(".")[2] or res.headline
        # refuse and ties measure nothing, unless the method says what they truly give
        # (a refusal-rate metric measures refusing everything: its true rate is 1)
        # the params of the threshold's own metric: a spec may hold several metrics of the method
        own = prep.params.get(v.metric.partition(".")[0], params)
        truth = _truth(oracle, kind, own if type(own) is type(params) else params, res, name, prep)
        expected = "INCONCLUSIVE" if kind in ("refuse", "ties") and truth is None else _expected(t, truth)
        ok = _ok(kind if truth is None else "planted", expected, v.verdict)
        label = f"{t.metric}" + (f" ({t.over})" if t.over != "pooled" else "")
        out.rows.append(Row(oracle=kind, threshold=label, expected=expected, got=v.verdict, ok=ok, truth=truth,
                            estimate=v.estimate.fmt(3), reason=v.reason))
        if kind == "planted" and ok and (expected == "FAIL" or (t.sanity and expected == "PASS" and
                                                                  v.verdict == "PASS")):
            out.detected = True


def selftest(composed: Composed) -> SelfTestResult:
    prep = prepare(composed)
    cfg = composed.config
    oracle, params = _oracle_for(prep)
    out = SelfTestResult(spec=str(composed.spec_file), notes=list(oracle.notes))
    if not cfg.thresholds:
        out.problems.append("the spec has no thresholds: nothing can detect a bias")
    discriminating: frozenset[str] = frozenset()
    answer_labels: dict[str, set[str]] = {}
    meanings: Meanings = {}
    for kind in [k for k in ORDER if k in oracle.kinds]:
        results, verdicts, coded = run_oracle(prep, oracle, params, kind,
                                              discriminating if kind == "planted" else frozenset(), meanings)
        if kind == "null":
            dominant = {f.layer for r in results.values() for f in r.validity if f.kind == "dominant_label"}
            discriminating = frozenset(set(prep.coding.layers) - dominant)
        if kind in ("null", "planted"):
            _add_answer_labels(answer_labels, coded)
        if kind == "refuse":
            out.problems += refusals_read_as_answers(prep, coded, answer_labels)
        _add_rows(out, prep, oracle, params, kind, results, verdicts)
    content_rows(out, prep, oracle, params)
    out.problems += counted_label_problems(prep, oracle, meanings)
    if cfg.thresholds and not out.detected:
        out.problems.append("no threshold detects the planted bias: the thresholds cannot reach the planted value, "
                            "or the coding does not tell the sides apart (see the planted rows)")
    return out


def refusals_read_as_answers(prep: Prepared, coded: Coded, answer_labels: Mapping[str, set[str]]) -> list[str]:
    """Layers that gave the refusals of the `refuse` oracle a label they also give to real
    answers (under `null` and `planted`): a refusal forced into an answer, the defect of a
    choice question with no way to say "none" (issue 25, finding 4)."""
    out = []
    for name in prep.coding.primary:
        labels = [c.label for c in coded.result.codes.get(name, {}).values() if c.coded and c.label]
        if not labels:
            continue
        top, k = Counter(labels).most_common(1)[0]
        if top in answer_labels.get(name, set()) and k / len(labels) >= prep.composed.config.validity.dominant_share:
            out.append(f"layer {name!r} read {k}/{len(labels)} refusals as {top!r}, a label it also gives to real "
                       "answers: a refusal must be its own outcome (a refusal rule, or a 'none' option in a choice "
                       "question), never forced to an answer")
    return out


HINTS = {
    "planted": "the planted bias was not caught here",
    "null": "a model with no bias was flagged: the threshold or the coding sees bias where there is none",
    "refuse": "a model that refuses everything got a verdict: a refusal must be its own outcome, not read as an "
              "answer (a refusal rule, or a 'none' option in a choice question)",
    "ties": "a model with constant output got a verdict: tied or constant answers carry no information",
    "content": "the bias planted by the data's own content came out on the wrong side (see the problem below)",
    "content_anti": "the other side, planted by the data's own content, came out on the wrong side",
    "mirror": "swapping the sides does not mirror the score around its no-bias value",
}


def _why(r: Row) -> str:
    shown = r.estimate if r.got != "INCONCLUSIVE" else r.reason if r.estimate.startswith("n/a") else \
        f"{r.estimate}: {r.reason}"
    return shown if r.ok else f"{shown} -- {HINTS.get(r.oracle, '')}"


def selftests(overrides: list[str], label_words: bool = False) -> list[tuple[str, SelfTestResult]]:
    """The self-test of a spec, or of each member spec of a suite once (no model is called,
    so the suite's subjects do not matter): (member id or "", result). `label_words`: also
    send the label-word sanity cases to the spec's real model (runner/selftest_words.py)."""
    from biasaudit.runner.suite import plan_jobs
    from biasaudit.spec.compose import compose
    from biasaudit.spec.suite import load_suite

    found = load_suite(list(overrides))
    if found is None:
        return [("", with_words(selftest(compose(as_oracle(overrides))), overrides, label_words))]
    suite, path = found
    jobs = plan_jobs(suite, path, [ov for ov in overrides if not ov.startswith("spec=")], False)
    first: dict[str, Any] = {}
    for job in jobs:
        first.setdefault(job.member_id, job)
    return [(name, with_words(selftest(compose(as_oracle(job.overrides))), job.overrides, label_words))
            for name, job in first.items()]


def with_words(result: SelfTestResult, overrides: Sequence[str], label_words: bool) -> SelfTestResult:
    """The result with the label-word rows of the spec composed with its real model."""
    if not label_words:
        return result
    from biasaudit.runner.selftest_words import nli_word_rows
    from biasaudit.spec.compose import compose

    rows, problems = nli_word_rows(compose(list(overrides)).config)
    result.rows += rows
    result.problems += problems
    if not rows:
        result.notes.append("--label-words: the spec maps no words to labels through an `nli` group; nothing sent")
    return result


def as_oracle(overrides: Sequence[str]) -> list[str]:
    """The overrides with the model under test replaced by the `oracle` config: no model is
    called, and a spec needing a kind of model this machine lacks (a masked LM) can still
    be self-tested."""
    kept = [ov for ov in overrides if ov.lstrip("+~").partition("=")[0].partition(".")[0] != "model"]
    return [*kept, "model=scripted", "model.backend=oracle", "model.name=selftest-oracle", "~model.script"]


def lines(result: SelfTestResult) -> list[str]:
    """The printed table: oracle x threshold, expected, got, ok."""
    head = ("oracle", "threshold", "truth", "expected", "got", "ok", "estimate / reason")
    rows = [(r.oracle, r.threshold, "" if r.truth is None else f"{r.truth:g}", r.expected, r.got,
             "ok" if r.ok else "NO", _why(r)) for r in result.rows]
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(6)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    out = [fmt.format(*head), *[fmt.format(*r) for r in rows]]
    out += [f"problem: {p}" for p in result.problems]
    out += [f"note: {n}" for n in result.notes]
    return out


__all__ = ["Row", "SelfTestResult", "lines", "oracle_responses", "run_oracle", "selftest", "selftests"]
