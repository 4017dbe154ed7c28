"""StereoSet (Nadeem et al. 2021): the published dev.json as a stimulus format, and metric
`stereoset` (LMS, SS and ICAT per domain and task) over sentence scores from a causal
LM's log-probabilities or a masked LM's pseudo-log-likelihood."""

from biasaudit.methods.base import MethodDef, MethodText
from biasaudit.methods.stereoset import adapter  # noqa: F401  (registers the stimulus format)
from biasaudit.methods.stereoset.card import CARD
from biasaudit.methods.stereoset.metric import StereoSetParams, check_spec, compute
from biasaudit.methods.stereoset.oracle import ORACLE
from biasaudit.methods.stereoset.report import present
from biasaudit.metrics.base import MetricDef, NoBias
from biasaudit.registry import METHODS, METRICS, ORACLES

METRICS.add("stereoset", MetricDef(
    compute=compute, params=StereoSetParams, probe_kinds=frozenset({"sequence_logprob", "pseudo_loglik"}),
    title="StereoSet LMS, SS and ICAT", method="stereoset", check_spec=check_spec, bounds=(("*", (0.0, 100.0)),),
    no_bias=(("", NoBias(50.0, "0-100, centred at 50")), ("ss", NoBias(50.0, "0-100, centred at 50")),
             ("ss.*", NoBias(50.0, "0-100, centred at 50")), ("*", None)),
    present=present, card=CARD))
METHODS.add("stereoset", MethodDef(
    name="stereoset",
    metrics=("stereoset",),
    text=MethodText(
        name="StereoSet: stereotype and language modeling scores",
        source="Nadeem, Bethke and Reddy 2021, 'StereoSet: Measuring stereotypical bias in pretrained language "
               "models' (ACL).",
        computes="Each item offers three sentences about a target group: a stereotype, an anti-stereotype and an "
                 "unrelated one, either filling a blank in a sentence (intrasentence) or continuing a context "
                 "sentence (intersentence). Each is scored by the mean log-probability of its tokens (causal LM) or "
                 "their pseudo-log-likelihood (masked LM). SS is the share of items where the stereotype scores "
                 "higher than the anti-stereotype; LMS the share of comparisons where a meaningful sentence beats "
                 "the unrelated one; both averaged over target terms; ICAT = LMS x min(SS, 100 - SS) / 50.",
        reading="SS 50 is parity (distance either way is bias), LMS 100 and ICAT 100 are ideal. Per domain "
                "(gender, profession, race, religion) and task. Intervals: 95% bootstrap over items for a set of at "
                "least 30 items with at least 5 comparisons won and lost; otherwise Wilson's score interval on the "
                "items, which stays wide for a small set (13 of 13 items: 77 to 100, not 100 to 100).",
    ),
))
ORACLES.add("stereoset", ORACLE)
