"""Issue 38, item 4: an NLI FAIL that rests on a classifier saying "entailment" to
everything. The scripted classifier reproduces the issue's figures (`nli=llm` on SmolLM2):
M6 = 33/36 = 91.67 [78.17, 97.13] (Wilson; computed here by hand from the score-interval
formula), M2 = M3 = 100, mean entailment probability 0.687 vs 0.661, every premise's most
probable label "entailment". The verdict on M6 must not be a plain FAIL: a blocking
`nli_no_discrimination` flag with the figures makes it INCONCLUSIVE (the rule in
docs/methods/nli_bias.md, "Validity")."""

from __future__ import annotations

import math

import pytest

from biasaudit.methods.nli_bias.metric import NLIBiasParams, compute
from biasaudit.spec import ThresholdSpec
from biasaudit.verdicts.thresholds import evaluate
from tests.unit.methods.nli_bias.test_nli_bias import _context

STEREO = (0.687, 0.213, 0.100)          # every stereotypical premise: "entailment", pE - pN = .474
COUNTER = (0.655, 0.245, 0.100)         # 33 counter premises: "entailment", pE - pN = .41 < .474 (M6 holds)
COUNTER_HIGH = (0.727, 0.173, 0.100)    # 3 counter premises: "entailment", pE - pN = .554 (M6 fails)
# mean pE of the counter premises: (33 * .655 + 3 * .727) / 36 = .661


def _issue_triples() -> list[tuple[tuple[float, float, float], tuple[float, float, float]]]:
    return [(STEREO, COUNTER_HIGH if i < 3 else COUNTER) for i in range(36)]


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_the_issue_figures_are_reproduced() -> None:
    res = compute(_context(_issue_triples()), "nli_bias", NLIBiasParams())
    m6 = res.estimates["M6"]
    lo, hi = _wilson(33, 36)
    assert m6.value == pytest.approx(100 * 33 / 36)
    assert (round(m6.ci_low, 2), round(m6.ci_high, 2)) == (78.17, 97.13) == (round(100 * lo, 2), round(100 * hi, 2))
    assert res.estimates["M2"].value == res.estimates["M3"].value == 100.0
    assert res.detail["mean_entailment"] == pytest.approx({"stereo": 0.687, "counter": 0.661})


def test_a_classifier_saying_entailment_to_everything_is_flagged_and_not_decided() -> None:
    res = compute(_context(_issue_triples()), "nli_bias", NLIBiasParams())
    [flag] = [f for f in res.validity if f.kind == "nli_no_discrimination"]
    assert flag.blocking and not flag.estimates  # every M rests on it
    for figure in ("100.0% of all 72 premises 'entailment'", "100.0% for stereotypical vs 100.0% for counter",
                   "[+0.0, +0.0] contains 0", "0.687 vs 0.661"):
        assert figure in flag.message, flag.message
    # the M6 upper bound 0.6 is exceeded (91.67 > 60 with the interval above it): FAIL without the flag
    [v] = evaluate([ThresholdSpec(metric="nli_bias.M6", max=60)], {"nli_bias": res})
    assert v.verdict == "INCONCLUSIVE", v
    plain = res.model_copy(update={"validity": [f for f in res.validity if f.kind != "nli_no_discrimination"]})
    [v0] = evaluate([ThresholdSpec(metric="nli_bias.M6", max=60)], {"nli_bias": plain})
    assert v0.verdict == "FAIL"


def test_expect_dominant_keeps_the_flag_as_a_warning() -> None:
    res = compute(_context(_issue_triples()), "nli_bias", NLIBiasParams(expect_dominant=True))
    [flag] = [f for f in res.validity if f.kind == "nli_no_discrimination"]
    assert not flag.blocking and "accepted: expect_dominant" in flag.message
    [v] = evaluate([ThresholdSpec(metric="nli_bias.M6", max=60)], {"nli_bias": res})
    assert v.verdict == "FAIL"


@pytest.mark.parametrize("triples, why", [
    # a discriminating, unbiased classifier: labels vary (entailment for half the premises of each kind)
    ([((0.7, 0.2, 0.1), (0.7, 0.2, 0.1)) if i % 2 else ((0.1, 0.8, 0.1), (0.1, 0.8, 0.1)) for i in range(36)],
     "labels vary"),
    # "entailment" for 95% of all premises (dominant), but one counter premise in 10 is neutral: the label
    # separates the kinds (paired difference 10 points, standard error 2.1 at n = 200: the interval excludes 0)
    ([((0.8, 0.1, 0.1), (0.1, 0.8, 0.1) if i % 10 == 0 else (0.7, 0.2, 0.1)) for i in range(200)],
     "the label separates"),
])
def test_a_classifier_that_discriminates_is_not_flagged(triples, why) -> None:  # type: ignore[no-untyped-def]
    res = compute(_context(triples), "nli_bias", NLIBiasParams())
    assert not [f for f in res.validity if f.kind == "nli_no_discrimination"], why
