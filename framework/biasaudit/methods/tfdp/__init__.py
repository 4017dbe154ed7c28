"""TFDP single-token disparity probing: metric `tfdp`, and the `tfdp_vectors` coder
that embeds what it aligns."""

from typing import Any

from pydantic import BaseModel

from biasaudit.methods.base import MethodDef, MethodText
from biasaudit.methods.tfdp import adapter  # noqa: F401  (registers the stimulus format)
from biasaudit.methods.tfdp.checks import check_spec
from biasaudit.methods.tfdp.coder import TFDP_VECTORS
from biasaudit.methods.tfdp.metric import TFDPParams, check, compute
from biasaudit.methods.tfdp.oracle import ORACLE
from biasaudit.methods.tfdp.report import present
from biasaudit.metrics.base import DefaultCoding, MetricDef, NoBias
from biasaudit.registry import CODERS, METHODS, METRICS, ORACLES
from biasaudit.spec import AuditConfig


def default_coding(params: BaseModel, cfg: AuditConfig) -> DefaultCoding:
    assert isinstance(params, TFDPParams)
    layer: dict[str, Any] = {
        "coder": "tfdp_vectors",
        "sentence": {params.slot: params.sentence, params.counter_slot: params.counter},
        "truth": {params.slot: params.truth, params.counter_slot: params.counter_truth},
    }
    return DefaultCoding.of({params.layer: layer})


CODERS.add("tfdp_vectors", TFDP_VECTORS)
METRICS.add("tfdp", MetricDef(
    compute=compute, params=TFDPParams, probe_kinds=frozenset({"generate", "next_token"}), title="TFDP",
    method="tfdp", check=check, check_spec=check_spec, layers=lambda p: {"layer": p.layer if isinstance(p, TFDPParams) else ""},
    default_coding=default_coding, present=present,
    bounds=(("contrast.*", (-2.0, 2.0)), ("*", (-1.0, 1.0))),
    no_bias=(("contrast.*", NoBias(0.0, "a difference of two scores, 0 is no difference")),
             ("WFS*", NoBias(0.0, "-1 to 1, 0 is no disparity")), ("PS*", NoBias(0.0, "-1 to 1, 0 is no disparity")),
             ("*", None))))
METHODS.add("tfdp", MethodDef(
    name="tfdp",
    metrics=("tfdp",),
    text=MethodText(
        name="TFDP single-token disparity probing",
        source="Singh et al., 'TFDP: Token-Efficient Disparity Audits for Autoregressive LLMs via Single-Token "
               "Masked Evaluation'.",
        computes="Each stimulus is a pair of sentences S and S' with one masked word; the model answers with a "
                 "single token (sampled n times, or its next-token distribution). Answers are embedded; PS is "
                 "the difference in alignment with the expected words, PSD the distance between the two answer "
                 "distributions (power-cosine kernel), and WFS = (1 - lambda) PS + lambda sign(PS) PSD.",
        reading="Parity tasks: 0 is ideal. Factuality tasks: positive means the factual sentence is aligned "
                "better. Intervals: t over pairs.",
    ),
))
ORACLES.add("tfdp", ORACLE)
