"""Every label a spec names must be one the layer it refers to can give: a metric's label
parameters (checked by the method's `check_spec`), a threshold on an estimate named
after a label, a reliability pair's `map` (keys and values) and a layer's `endorse`
list. A misspelt label would otherwise never match a code, and its rate would read 0.

A layer's labels are those its codes can carry: its own (`labels`, or the ones the
coder's options imply) and its fallback's, whose codes replace its abstentions. A layer
whose set is open (a value layer, or labels neither declared nor implied) is not checked.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from biasaudit.coding.base import CoderEnv
from biasaudit.errors import BiasAuditError, SpecError
from biasaudit.registry import CODERS
from biasaudit.spec import AuditConfig, CodingLayerSpec

if TYPE_CHECKING:
    from biasaudit.coding.layers import Layer


class MetricLabelError(SpecError):
    """A label a metric parameter names, which its layer cannot give. `key` is relative to
    the metric's entry (`labels[0]`); `metric_params` places it under `metrics[<i>]`."""


def closest(label: str, labels: Sequence[str]) -> str | None:
    """The label `label` is most likely a misspelling of (labels are short: `QF` for `QE`)."""
    same_case = [lab for lab in labels if lab.casefold() == label.casefold()]
    if same_case:
        return same_case[0]
    close = difflib.get_close_matches(label, list(labels), n=1, cutoff=0.5)
    return close[0] if close else None


def unknown_label(label: str, labels: Sequence[str], layer: str, what: str, *, file: str | None = None,
                  key: str | None = None, after_map: bool = False, cls: type[SpecError] = SpecError) -> SpecError:
    """The error for `label`, which layer `layer` (labels `labels`; with `after_map`, as a
    reliability pair's `map` renames them) cannot give, with a did-you-mean hint:
    "<what> 'x', which layer 'l' cannot give"."""
    close = closest(label, labels)
    mapped = " after its `map`" if after_map else ""
    listed = f"labels of layer {layer!r}{mapped}: {', '.join(labels)}"
    hint = f"did you mean {close!r}? {listed}" if close else listed
    return cls(f"{what} {label!r}, which layer {layer!r} cannot give{mapped}", file=file, key=key, hint=hint)


def check_labels(names: str | Sequence[str], labels: Sequence[str] | None, layer: str, what: str, *,
                 file: str | None = None, key: str | None = None, cls: type[SpecError] = SpecError) -> None:
    """Each of `names` is one of `labels` (nothing is checked when `labels` is None: an
    open set). A list gets item keys (`key[0]`); one label, `key` itself."""
    if labels is None:
        return
    items = [(key, names)] if isinstance(names, str) else [(f"{key}[{j}]", n) for j, n in enumerate(names)]
    for k, name in items:
        if name not in labels:
            raise unknown_label(name, labels, layer, what, file=file, key=k, cls=cls)


def _own_labels(name: str, spec: CodingLayerSpec, cfg: AuditConfig) -> tuple[str, ...] | None:
    """A declared layer's own label set, read from the spec alone (None: open, or the layer
    has a problem the compiled coding reports)."""
    try:
        cdef = CODERS.get(spec.coder)
        options = cdef.options.model_validate(spec.options())
        env = CoderEnv(layer=name, spec=spec, config=cfg, spec_file=None, variables=frozenset())
        if cdef.value_type(env, options) != "label":
            return None
        if spec.labels is not None:
            return tuple(spec.labels)
        implied = cdef.labels(env, options)
    except (BiasAuditError, ValidationError):
        return None
    return tuple(implied) if implied is not None else None


def config_labels(cfg: AuditConfig, name: str, fallback: bool = True) -> tuple[str, ...] | None:
    """The labels the codes of the spec's layer `name` can carry (with `fallback`: its
    fallback's too), read from the spec before the layers compile (for a metric's
    `check_spec`); None when the set is open or the spec does not declare the layer (a
    spec without `coding:` gets its metrics' default layers, made from the metric's own
    parameters)."""
    out: list[str] = []
    seen: set[str] = set()
    current: str | None = name
    while current is not None and current not in seen:
        seen.add(current)
        spec = cfg.coding.get(current)
        if spec is None:
            return None
        own = _own_labels(current, spec, cfg)
        if own is None:
            return None
        out += [lab for lab in own if lab not in out]
        current = spec.fallback if fallback else None
    return tuple(out)


def plan_labels(layers: Mapping[str, Layer], name: str) -> tuple[str, ...] | None:
    """`config_labels` of compiled layers."""
    out: list[str] = []
    seen: set[str] = set()
    current: str | None = name
    while current is not None and current not in seen:
        seen.add(current)
        lay = layers.get(current)
        if lay is None or lay.value_type != "label" or lay.labels is None:
            return None
        out += [lab for lab in lay.labels if lab not in out]
        current = lay.spec.fallback
    return tuple(out)


def metric_ids(cfg: AuditConfig, metric: str, params: BaseModel) -> list[str]:
    """The ids of the spec's metrics called `metric` whose parameters are `params` (a
    `check_spec` is given the parameters, not the entry they came from)."""
    out = []
    for m in cfg.metrics:
        if m.name != metric:
            continue
        try:
            if type(params).model_validate(m.params()) == params:
                out.append(m.key)
        except ValidationError:
            continue
    return out


def check_estimate_labels(cfg: AuditConfig, ids: Sequence[str], prefix: str, labels: Sequence[str] | None,
                          layer: str) -> None:
    """Thresholds on `<id>.<prefix><label>` (an estimate per label, e.g. `share.refuse`)
    name a label of `layer`'s own set (`labels`)."""
    if labels is None:
        return
    for i, t in enumerate(cfg.thresholds):
        mid, _, est = t.metric.partition(".")
        if mid not in ids or not est.startswith(prefix):
            continue
        label = est[len(prefix):]
        if label not in labels:
            close = closest(label, labels)
            listed = f"labels of layer {layer!r}: {', '.join(labels)}"
            raise SpecError(f"threshold on estimate {est!r} names {label!r}, which layer {layer!r} cannot give",
                            key=f"thresholds[{i}].metric",
                            hint=f"did you mean '{mid}.{prefix}{close}'? {listed}" if close else listed)


__all__ = ["MetricLabelError", "check_estimate_labels", "closest", "check_labels", "config_labels", "metric_ids", "plan_labels",
           "unknown_label"]
