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

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from biasaudit.errors import SpecError
from biasaudit.methods.oracle_kit import OracleDef
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.verdict import VerdictRecord
from biasaudit.registry import ORACLES
from biasaudit.runner.pipeline import Coded, Prepared, prepare
from biasaudit.runner.selftest_content import content_rows, counted_label_problems
from biasaudit.runner.selftest_groups import group_rows
from biasaudit.runner.selftest_oracles import (
    Meanings,
    Row,
    SelfTestResult,
    oracle_responses,
    run_oracle,
    truth_of,
)
from biasaudit.spec import ThresholdSpec
from biasaudit.spec.compose import Composed

ORDER = ("null", "planted", "refuse", "ties")
_truth = truth_of  # the name tests and older callers use


def _oracle_for(prep: Prepared) -> tuple[OracleDef, Any]:
    cfg = prep.composed.config
    spec = str(prep.composed.spec_file)
    for m in cfg.metrics:
        if m.name in ORACLES.names():
            return ORACLES.get(m.name), prep.params[m.key]
    raise SpecError(f"no self-test oracle for the metrics of this spec ({', '.join(m.name for m in cfg.metrics)})",
                    file=spec, key="metrics", hint=f"self-tests exist for: {', '.join(ORACLES.names())}")


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
        truth = truth_of(oracle, kind, own if type(own) is type(params) else params, res, name, prep)
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
    group_rows(out, prep, oracle, params)
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
    "permute": "the gap planted by content on one group's levels did not come out on that group (see the problem)",
}


def _why(r: Row) -> str:
    shown = r.estimate if r.got != "INCONCLUSIVE" else r.reason if r.estimate.startswith("n/a") else \
        f"{r.estimate}: {r.reason}"
    if r.ok and r.expected == "PASS" and r.got == "INCONCLUSIVE":
        # "expected PASS, got INCONCLUSIVE, ok" reads as a contradiction: say why it is not
        inside = f"the true value {r.truth:g} is inside the band" if r.truth is not None else "PASS is expected"
        return f"accepted, a finite sample may not decide: {inside}, but {shown}"
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
    from biasaudit.runner.selftest_judges import judge_word_rows
    from biasaudit.runner.selftest_words import nli_word_rows
    from biasaudit.spec.compose import compose

    composed = compose(list(overrides))
    rows, problems = nli_word_rows(composed.config)
    jrows, jproblems, jnotes = judge_word_rows(composed)
    result.rows += rows + jrows
    result.problems += problems + jproblems
    result.notes += jnotes
    if not rows and not jrows:
        result.notes.append("--label-words: the spec maps no words to labels through an `nli` group or a judge "
                            "layer with `endorse` labels; nothing sent")
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
