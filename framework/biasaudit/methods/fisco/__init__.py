"""FiSCo group counterfactual fairness: metric `fisco` (over a `claims` coding layer),
and FiSCo's published raw.json as a recorded-response format for `replay`."""

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from biasaudit.coding.coders.claims import ClaimRecords, ClaimsOptions
from biasaudit.methods.base import MethodDef, MethodText, RecordingFormat
from biasaudit.methods.fisco import adapter, recorded  # noqa: F401  (adapter registers the stimulus format)
from biasaudit.methods.fisco.claim_records import (
    EntryKeys,
    Level,
    recorded_claims,
    recorded_labels,
    resolve_entries,
)
from biasaudit.methods.fisco.metric import FiscoParams, check, compute
from biasaudit.methods.fisco.oracle import ORACLE
from biasaudit.methods.fisco.report import present
from biasaudit.metrics.base import DefaultCoding, MetricDef
from biasaudit.records.codes import Unit
from biasaudit.registry import CLAIM_RECORDS, METHODS, METRICS, ORACLES, RECORDINGS
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


def _entries(units: Sequence[Unit], o: ClaimsOptions, file: str | None, levels: Sequence[Level],
             samples: int) -> dict[str, int | None]:
    keys = EntryKeys(field=o.recorded_field, var=o.recorded_var, group_var=o.recorded_group_var,
                     group_field=o.recorded_group_field)
    return resolve_entries(units, keys, file, levels, samples)


RECORDINGS.add("fisco_raw", RecordingFormat(matches=recorded.matches, prompts=recorded.prompts))
# the published claims.json / labels.json, read by a `claims` layer with `extract: recorded`
CLAIM_RECORDS.add("fisco_raw", ClaimRecords(entries=_entries, claims=recorded_claims, labels=recorded_labels))
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
