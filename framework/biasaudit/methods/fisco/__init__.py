"""FiSCo group counterfactual fairness: metric `fisco` (over a `claims` coding layer),
and FiSCo's published raw.json as a recorded-response format for `replay`."""

from typing import Any

from pydantic import BaseModel

from biasaudit.methods.base import MethodDef, MethodText, RecordingFormat
from biasaudit.methods.fisco import adapter, recorded  # noqa: F401  (adapter registers the stimulus format)
from biasaudit.methods.fisco.metric import FiscoParams, check, compute
from biasaudit.methods.fisco.oracle import ORACLE
from biasaudit.methods.fisco.report import present
from biasaudit.metrics.base import DefaultCoding, MetricDef
from biasaudit.registry import METHODS, METRICS, ORACLES, RECORDINGS
from biasaudit.spec import AuditConfig


def default_coding(params: BaseModel, cfg: AuditConfig) -> DefaultCoding:
    """Claims split by sentence, group values masked, checked against every other answer
    to the question; the embedding layer behind the `ccosine` baseline."""
    assert isinstance(params, FiscoParams)
    layers: dict[str, dict[str, Any]] = {
        params.claims: {"coder": "claims", "extract": "sentences", "min_words": 5,
                        "mask": {"var": "value", "placeholder": "[NAME]"}, "against": "same_stimulus"},
    }
    if "ccosine" in params.baselines:
        layers[params.cosine] = {"coder": "embedding", "input": f"layer:{params.claims}", "compare": "same_stimulus"}
    return DefaultCoding.of(layers)


def _layers(p: BaseModel) -> dict[str, str]:
    assert isinstance(p, FiscoParams)
    return {"claims": p.claims, **({"cosine": p.cosine} if "ccosine" in p.baselines else {})}


RECORDINGS.add("fisco_raw", RecordingFormat(matches=recorded.matches, prompts=recorded.prompts))
METRICS.add("fisco", MetricDef(compute=compute, params=FiscoParams, probe_kinds=frozenset({"generate"}),
                               title="FiSCo", method="fisco", check=check, layers=_layers,
                               default_coding=default_coding,
    bounds=(("contrast.*", (-1.0, 1.0)), ("*", (0.0, 1.0))), present=present))
METHODS.add("fisco", MethodDef(
    name="fisco",
    metrics=("fisco",),
    text=MethodText(
        name="FiSCo group counterfactual fairness",
        source="Xu et al., 'Quantifying Fairness in LLMs Beyond Tokens: A Semantic and Statistical Perspective' "
               "(FiSCo).",
        computes="Each question is asked once per person of each group; long answers are split into claims "
                 "and every claim is checked by NLI against every other answer. Similarity is the weighted "
                 "share of entailed, neutral and contradicted claims. A question is flagged when answers across "
                 "groups are significantly less similar than answers within groups (Welch's t, Holm-corrected).",
        reading="The headline is the share of flagged questions (lower is better), with a Wilson 95% interval.",
    ),
))
ORACLES.add("fisco", ORACLE)
