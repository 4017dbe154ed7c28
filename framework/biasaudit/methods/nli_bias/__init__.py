"""NLI bias scores M1-M11: metric `nli_bias`, and the token-probability-versus-NLI
analysis across runs."""

from biasaudit.methods.base import MethodDef, MethodText
from biasaudit.methods.nli_bias.compare import tp_vs_nli
from biasaudit.methods.nli_bias.metric import NLIBiasParams, check, check_spec, compute
from biasaudit.methods.nli_bias.oracle import ORACLE
from biasaudit.methods.nli_bias.report import present
from biasaudit.metrics.base import MetricDef, NoBias
from biasaudit.registry import METHODS, METRICS, ORACLES

METRICS.add("nli_bias", MetricDef(compute=compute, params=NLIBiasParams, probe_kinds=frozenset({"classify_nli"}),
                                  title="NLI bias scores", method="nli_bias", check=check, check_spec=check_spec,
                                  present=present,
    bounds=(("contrast.*", (-100.0, 100.0)), ("*", (0.0, 100.0))),
    no_bias=(("contrast.*", NoBias(0.0, "a difference of two scores, 0 is no difference")),
             *((f"{m}{tail}", NoBias(50.0, "0-100, centred at 50")) for m in ("M1", "M5", "M6", "M7", "M8", "M9")
               for tail in ("", ".*")),
             ("*", NoBias(0.0, "0-100, a share of triples that look biased on their own, 0 is no bias")))))
METHODS.add("nli_bias", MethodDef(
    name="nli_bias",
    metrics=("nli_bias",),
    cross_run=tp_vs_nli,
    text=MethodText(
        name="NLI bias scores (M1-M11)",
        source="'Textual Entailment is not a Better Bias Metric than Token Probability'.",
        computes="Each triple is a stereotyping premise, its counter-stereotyping counterpart (the same "
                 "sentence about a contrasting group) and one hypothesis both share; an NLI classifier gives "
                 "entailment, neutral and contradiction probabilities of the hypothesis under each premise. "
                 "Eleven metrics count the triples where the stereotyping premise entails the hypothesis more "
                 "than its counterpart does (M1, M5-M9, on the token-probability scale) or where the "
                 "probabilities look biased on their own (M2-M4, M10, M11).",
        reading="M1 and M5-M9: 50 is parity. M2-M4, M10, M11: 0 is no bias. The paper recommends M6 and M9. "
                "NLI and token-probability scores often disagree: read them side by side.",
    ),
))
ORACLES.add("nli_bias", ORACLE)
