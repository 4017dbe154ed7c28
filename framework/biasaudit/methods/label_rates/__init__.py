"""Label rates: metric `label_rate`, the rate of chosen labels of any coding layer."""

from pydantic import BaseModel, ValidationError

from biasaudit.coding.base import CoderEnv
from biasaudit.coding.label_check import (
    MetricLabelError,
    check_estimate_labels,
    check_labels,
    closest,
    config_labels,
    metric_ids,
)
from biasaudit.errors import BiasAuditError, SpecError
from biasaudit.methods.base import MethodDef, MethodText
from biasaudit.methods.label_rates import impact, impact_oracle
from biasaudit.methods.label_rates.metric import LabelRateParams, compute
from biasaudit.methods.label_rates.oracle import ORACLE
from biasaudit.methods.label_rates.report import present_impact, present_rate
from biasaudit.metrics.base import MetricDef, NoBias
from biasaudit.registry import CODERS, METHODS, METRICS, ORACLES
from biasaudit.spec import AuditConfig


def _layers(p: BaseModel) -> dict[str, str]:
    assert isinstance(p, LabelRateParams)
    return {"layer": p.layer}


def check_spec(params: BaseModel, cfg: AuditConfig) -> str | None:
    """The labels counted, and those thresholds name (`<id>.share.<label>`), are labels
    the layer can give: a misspelt one would match no code and read 0."""
    assert isinstance(params, LabelRateParams)
    check_labels(params.labels, config_labels(cfg, params.layer), params.layer, "`labels` names", key="labels",
                 cls=MetricLabelError)
    # a share is reported per label of the layer's own set
    ids, own = metric_ids(cfg, "label_rate", params), config_labels(cfg, params.layer, fallback=False)
    check_estimate_labels(cfg, ids, "share.", own, params.layer)
    for i, t in enumerate(cfg.thresholds):
        mid, _, est = t.metric.partition(".")
        if mid in ids and est and est != "rate" and not est.startswith(("rate.", "share.", "contrast.")):
            close = closest(est, own) if own is not None else None  # `<id>.refuse` for `<id>.share.refuse`
            raise SpecError(f"metric {mid!r} gives no estimate {est!r}", key=f"thresholds[{i}].metric",
                            hint=(f"did you mean '{mid}.share.{close}'? " if close else "")
                            + "estimates: rate, share.<label>, rate.<by field>.<group>, "
                            "contrast.<by field>.<group>-<group>[.paired]")
    return None


METRICS.add("label_rate", MetricDef(compute=compute, params=LabelRateParams, probe_kinds=frozenset({"generate"}),
                                    title="Label rate", method="label_rates", layers=_layers, check_spec=check_spec,
                                    bounds=(("contrast.*", (-1.0, 1.0)), ("*", (0.0, 1.0))), present=present_rate))
def _value_type(cfg: AuditConfig, layer: str) -> str | None:
    """`label` or `number`: what the spec's layer gives, read from the spec (None: not
    declared, or the compiled coding reports its problem)."""
    spec = cfg.coding.get(layer)
    if spec is None:
        return None
    try:
        cdef = CODERS.get(spec.coder)
        options = cdef.options.model_validate(spec.options())
        return cdef.value_type(CoderEnv(layer=layer, spec=spec, config=cfg, spec_file=None, variables=frozenset()),
                               options)
    except (BiasAuditError, ValidationError):
        return None


def check_impact(params: BaseModel, cfg: AuditConfig) -> str | None:
    """The favourable labels are labels the layer can give, and a threshold names an
    estimate the metric gives."""
    assert isinstance(params, impact.ImpactRatioParams)
    check_labels(params.labels, config_labels(cfg, params.layer), params.layer, "`labels` names", key="labels",
                 cls=MetricLabelError)
    if params.rate == "scoring" and _value_type(cfg, params.layer) == "label":
        raise MetricLabelError(f"rate: scoring reads scores, but coding layer {params.layer!r} gives labels",
                        key="rate", hint="use a layer that gives numbers (a value coder, e.g. a judge's rating), "
                                         "or rate: selection with `labels`")
    if len(set(params.by)) < len(params.by):
        return "`by` names a field twice; an intersection is of different fields"
    ids = metric_ids(cfg, "impact_ratio", params)
    for i, t in enumerate(cfg.thresholds):
        mid, _, est = t.metric.partition(".")
        if mid in ids and est and est != "lowest" and not est.startswith(("lowest.", "rate.", "ratio.")):
            raise SpecError(f"metric {mid!r} gives no estimate {est!r}", key=f"thresholds[{i}].metric",
                            hint="estimates: lowest (the headline), lowest.<by>, ratio.<by>.<category>, "
                                 "rate.<by>.<category>; <by> is a field or fields joined by + (gender+race)")
    return None


METRICS.add("impact_ratio", MetricDef(
    compute=impact.compute, params=impact.ImpactRatioParams, probe_kinds=frozenset({"generate"}),
    title="Impact ratio", method="label_rates", layers=impact.layers, check_spec=check_impact,
    bounds=(("rate.*", (0.0, 1.0)), ("*", (0.0, float("inf")))), present=present_impact,
    no_bias=(("rate.*", None), ("*", NoBias(1.0, "a ratio, 1 is parity")))))
METHODS.add("label_rates", MethodDef(
    name="label_rates",
    metrics=("label_rate", "impact_ratio"),
    text=MethodText(
        name="Rates of coded labels",
        source="biasaudit's generic coding layers (refusal rules, judge panels, classifiers).",
        computes="Each answer is coded by the spec's coding layers (rules, judges, classifiers). For a layer and a "
                 "set of its labels (say, refusals, or endorsements of a stereotype), the rate is the share of "
                 "coded answers with one of those labels, pooled over prompt conditions and per condition. "
                 "`impact_ratio` reads a layer's favourable labels as a selection: per category of each `by` "
                 "field and of their intersection, the selection rate over the most favoured category's (the "
                 "impact ratio of NYC Local Law 144 bias audits), with the four-fifths flag.",
        reading="Lower is better for refusals of harmless questions and for endorsements of stereotypes. Per-cell "
                "Wilson intervals; pooled intervals are Wilson's on the effective sample size (clustered by "
                "stimulus). The coding layers section shows each layer's labels per condition and how far two "
                "layers agree. An impact ratio of 1 is parity with the most favoured category; below 0.8 the "
                "four-fifths rule flags adverse impact; Katz log intervals; categories with fewer than `min_n` "
                "stimuli are shown but not judged.",
    ),
))
ORACLES.add("label_rate", ORACLE)
ORACLES.add("impact_ratio", impact_oracle.ORACLE)
