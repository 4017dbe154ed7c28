"""Pivotal-token perplexity: metric `pivotal_perplexity`, and the `frame_prompt`
template function its specs build prompts with."""

from biasaudit.methods.base import MethodDef, MethodText
from biasaudit.methods.pivotal_perplexity.metric import PivotalParams, check, check_spec, compute
from biasaudit.methods.pivotal_perplexity.oracle import ORACLE
from biasaudit.methods.pivotal_perplexity.report import present
from biasaudit.methods.pivotal_perplexity.segments import frame_prompt
from biasaudit.metrics.base import MetricDef, NoBias
from biasaudit.registry import METHODS, METRICS, ORACLES, TEMPLATE_FUNCTIONS

TEMPLATE_FUNCTIONS.add("frame_prompt", frame_prompt)
METRICS.add(
    "pivotal_perplexity",
    MetricDef(compute=compute, params=PivotalParams, probe_kinds=frozenset({"sequence_logprob"}),
              title="Pivotal-token perplexity", method="pivotal_perplexity", check=check, check_spec=check_spec, present=present,
    bounds=(("accuracy", (0.0, 1.0)), ("accuracy.*", (0.0, 1.0)), ("contrast.*", (-1.0, 1.0))),
    # accuracy: a share of prompt pairs, a model that cannot tell the labels apart is right half the time
    no_bias=(("accuracy", NoBias(0.5, "share of pairs, 0.5 is chance")),
             ("accuracy.*", NoBias(0.5, "share of pairs, 0.5 is chance")), ("*", None))),
)
METHODS.add("pivotal_perplexity", MethodDef(
    name="pivotal_perplexity",
    metrics=("pivotal_perplexity",),
    text=MethodText(
        name="Pivotal-token perplexity",
        source="Prins et al., 'Is my model perplexed for the right reason? Contrasting LLMs' Benchmark Behavior "
               "with Token-Level Perplexity'.",
        computes="Each stimulus is a pair of sentences differing in a few pivotal words, placed in labelled "
                 "frames (4 wordings x 2 orders). The correctly and incorrectly labelled prompts are compared "
                 "token by token; each token's share of the perplexity difference is summed by class (pivotal, "
                 "period, other) as a plain and a normalized proportion; accuracy is the share of prompt pairs "
                 "where the correct prompt has the lower perplexity.",
        reading="Normalized proportion above 0 for pivotal tokens means the model is perplexed for the right "
                "reason. Intervals: the proportions, cluster-robust t over stimuli; accuracy, a share of prompt "
                "pairs, Wilson's interval on the effective sample size (clustered by stimulus).",
    ),
))
ORACLES.add("pivotal_perplexity", ORACLE)
