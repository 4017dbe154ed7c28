"""Token-probability bias score: docs/methods/token_probability.md checks."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.proportion import proportion_confint

from biasaudit.backends import Response
from biasaudit.data import Stimulus, StimulusSet
from biasaudit.methods.token_probability.metric import (
    BiasScoreParams,
    ar_full,
    ar_shared,
    compute,
    shared_positions,
)
from biasaudit.metrics import MetricContext
from biasaudit.plan import compile_plan
from biasaudit.report.presentation import present
from biasaudit.spec import validate_config


def out(ids: list[int], lps: list[float]) -> dict:
    return {"token_ids": ids, "logprobs": [None, *lps], "tokens": [str(i) for i in ids], "offsets": [[0, 0]] * len(ids)}


def test_ar_full_is_sum_after_bos() -> None:
    assert ar_full(out([1, 5, 6, 7], [-1.0, -2.5, -0.25])) == pytest.approx(-3.75)


def test_ar_shared_scores_only_shared_tokens_by_hand() -> None:
    # BOS=1; "the doctor she said" vs "the doctor he said": ids differ at position 3.
    a = out([1, 10, 11, 12, 13], [-1.0, -2.0, -3.0, -4.0])
    b = out([1, 10, 11, 22, 13], [-1.5, -2.5, -9.0, -5.0])
    pa, pb = shared_positions(a["token_ids"], b["token_ids"])
    assert pa == [0, 1, 2, 4] and pb == [0, 1, 2, 4]
    sa, sb, n = ar_shared(a, b)
    assert n == 3  # BOS skipped, last token kept
    assert sa == pytest.approx(-1.0 - 2.0 - 4.0)
    assert sb == pytest.approx(-1.5 - 2.5 - 5.0)


def test_ar_shared_with_different_lengths() -> None:
    a = out([1, 10, 30, 31, 13], [-1.0, -2.0, -3.0, -4.0])
    b = out([1, 10, 40, 13], [-0.5, -7.0, -0.75])
    sa, sb, n = ar_shared(a, b)
    assert n == 2
    assert sa == pytest.approx(-1.0 - 4.0)
    assert sb == pytest.approx(-0.5 - 0.75)


def _ctx(pairs: list[tuple[float, float]], directions: list[str] | None = None) -> MetricContext:
    stimuli = [
        Stimulus(id=str(i), fields={"more": f"m{i}", "less": f"l{i}", "bias_type": "g" if i % 2 else "h",
                                    "direction": (directions or ["stereo"] * len(pairs))[i]})
        for i in range(len(pairs))
    ]
    cfg = validate_config({
        "audit": {"name": "t", "method": "token_probability"},
        "stimuli": {"inline": [s.fields for s in stimuli]},
        "probe": {"kind": "sequence_logprob", "inputs": {"more": "{{ more }}", "less": "{{ less }}"}},
        "metrics": [{"name": "bias_score"}],
        "model": {"backend": "scripted", "name": "s"},
    }, spec_file=None)
    sset = StimulusSet(stimuli=stimuli, source=None, sha256=None, format="csv", n_total=len(stimuli))
    plan = compile_plan(cfg, sset, {"m": 1})
    responses = {}
    by_text = {}
    for i, (more, less) in enumerate(pairs):
        by_text[f"m{i}"] = more
        by_text[f"l{i}"] = less
    for key, req in plan.requests.items():
        responses[key] = Response(key=key, status="ok", output=out([1, 2], [by_text[req.text]]))
    return MetricContext(config=cfg, plan=plan, responses=responses)


def test_model_preferring_more_everywhere_scores_100() -> None:
    res = compute(_ctx([(-1.0, -2.0)] * 10), "bias_score", BiasScoreParams())
    assert res.estimates["score"].value == 100.0
    assert res.counts["ties"] == 0


def test_ties_everywhere_score_undefined_all_neutral() -> None:
    # issue 25 finding 5: the old 0.0 was no measurement (and FAILed a 40..60 threshold)
    res = compute(_ctx([(-1.0, -1.0)] * 8), "bias_score", BiasScoreParams())
    assert res.estimates["score"].value is None and res.estimates["score"].n == 8
    assert res.estimates["score"].note.startswith("undefined: every pair ties")
    assert res.counts["ties"] == 8
    assert res.estimates["neutral"].value == 1.0
    assert [f.kind for f in res.validity] == ["valid_share"]
    assert "0/8 pairs" in res.validity[0].message and "tied: 8" in res.validity[0].message


def test_rounding_to_three_decimals_makes_ties() -> None:
    # -1.0001 and -1.0004 both round to -1.0: a tie, counted in N
    res = compute(_ctx([(-1.0001, -1.0004), (-1.0, -3.0)]), "bias_score", BiasScoreParams())
    assert res.counts["ties"] == 1
    assert res.estimates["score"].value == 50.0


def test_score_interval_is_wilson_times_100() -> None:
    pairs = [(-1.0, -2.0)] * 7 + [(-2.0, -1.0)] * 5
    res = compute(_ctx(pairs), "bias_score", BiasScoreParams())
    lo, hi = proportion_confint(7, 12, alpha=0.05, method="wilson")
    e = res.estimates["score"]
    assert e.value == pytest.approx(100 * 7 / 12)
    assert e.ci_low == pytest.approx(100 * lo) and e.ci_high == pytest.approx(100 * hi)
    assert e.method == "wilson" and e.n == 12


def test_per_direction_and_group_breakdown() -> None:
    pairs = [(-1.0, -2.0), (-2.0, -1.0), (-1.0, -2.0), (-1.0, -2.0)]
    dirs = ["stereo", "stereo", "antistereo", "antistereo"]
    res = compute(_ctx(pairs, dirs), "bias_score", BiasScoreParams())
    assert res.estimates["direction.stereo"].value == 50.0
    assert res.estimates["direction.antistereo"].value == 100.0
    # bias_type h = ids 0, 2 -> both prefer more; g = ids 1, 3 -> one of two
    assert res.estimates["bias_type.h"].value == 100.0
    assert res.estimates["bias_type.g"].value == 50.0
    diffs = [1.0, -1.0, 1.0, 1.0]
    assert res.estimates["likelihood_diff.mean"].value == pytest.approx(sum(diffs) / 4)


def test_failed_response_is_unscorable_not_dropped() -> None:
    ctx = _ctx([(-1.0, -2.0)] * 3)
    key = ctx.plan.items[0].key
    ctx.responses[key] = Response(key=key, status="failed", error="timeout")
    res = compute(ctx, "bias_score", BiasScoreParams())
    assert res.counts["unscorable"] == 1 and res.counts["pairs"] == 3 and res.counts["scored"] == 2
    assert not res.tables  # the report section declares them (`present`)
    shown = present(res, "bias_score", BiasScoreParams(), ctx.config)
    assert [r for t in shown.tables if t.title == "Unscorable pairs" for r in t.rows] == [["base", "0", "timeout"]]
    assert not math.isnan(res.estimates["score"].value or 0)
