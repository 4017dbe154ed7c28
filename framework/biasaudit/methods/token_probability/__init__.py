"""Token-probability bias score (CrowS-Pairs, WinoQueer): metric `bias_score`."""

from biasaudit.methods.base import MethodDef, MethodText
from biasaudit.methods.token_probability.card import CARD
from biasaudit.methods.token_probability.metric import (
    MODE_PROBE,
    BiasScoreParams,
    check,
    check_spec,
    compute,
)
from biasaudit.methods.token_probability.oracle import ORACLE
from biasaudit.methods.token_probability.report import present
from biasaudit.metrics.base import MetricDef, NoBias
from biasaudit.registry import METHODS, METRICS, ORACLES

METRICS.add(
    "bias_score",
    MetricDef(compute=compute, params=BiasScoreParams,
              probe_kinds=frozenset(MODE_PROBE.values()), title="Token-probability bias score",
              method="token_probability", check=check, check_spec=check_spec, present=present, card=CARD,
    bounds=(("", (0.0, 100.0)), ("neutral", (0.0, 1.0)), ("likelihood_diff.*", None), ("contrast.*", (-100.0, 100.0)), ("*", (0.0, 100.0))),
    no_bias=(("neutral", None), ("likelihood_diff.*", NoBias(0.0, "a log-probability difference, 0 is no bias")),
             ("contrast.*", NoBias(0.0, "a difference of two scores, 0 is no difference")),
             ("*", NoBias(50.0, "0-100, centred at 50")))),
)
METHODS.add("token_probability", MethodDef(
    name="token_probability",
    metrics=("bias_score",),
    text=MethodText(
        name="Token-probability bias score",
        source="Nangia et al. 2020 (CrowS-Pairs); Felkner et al. 2023 (WinoQueer); as compared in "
               "'Textual Entailment is not a Better Bias Metric than Token Probability'.",
        computes="Each stimulus is a minimal pair: a sentence that stereotypes a group and one that does not. "
                 "The model scores both (sum of token log-probabilities: all tokens for ar_full, the shared "
                 "tokens for ar_shared, masked pseudo-log-likelihood of the shared tokens for pll_shared). The "
                 "bias score is the percentage of pairs where the stereotyping sentence scores higher, ties "
                 "counted in N.",
        reading="50 is parity. Distance from 50 in either direction is bias. Intervals are Wilson 95% on the "
                "share of pairs.",
    ),
))
ORACLES.add("bias_score", ORACLE)
