"""Cross-reference checks that need the registries: metrics and their parameters, probe
kinds against the backend, coding layers (and the layers metrics read), thresholds
against metrics. Everything here runs before any model call or file write."""

from __future__ import annotations

import fnmatch
import logging

from pydantic import BaseModel, ValidationError

from biasaudit.backends import check_audit_support
from biasaudit.coding.label_check import MetricLabelError
from biasaudit.coding.layers import CodingPlan, compile_coding
from biasaudit.coding.routes import check_routes
from biasaudit.errors import SpecError
from biasaudit.registry import ADAPTERS, METHODS, METRICS
from biasaudit.spec import (
    AuditConfig,
    CodingLayerSpec,
    ReliabilityPairSpec,
    RuntimeLimits,
    ThresholdSpec,
)
from biasaudit.spec.errors_format import describe

log = logging.getLogger(__name__)


def metric_params(cfg: AuditConfig, spec_file: str | None) -> dict[str, BaseModel]:
    out: dict[str, BaseModel] = {}
    for i, m in enumerate(cfg.metrics):
        mdef = METRICS.get(m.name, file=spec_file, key=f"metrics[{i}].name")
        try:
            params = mdef.params.model_validate(m.params(), strict=True)  # no "3" for 3 (spec.models.Strict)
        except ValidationError as exc:
            path, msg, hint = describe(exc, mdef.params)[0]
            raise SpecError(msg, file=spec_file, key=f"metrics[{i}].{path}", hint=hint) from None
        if cfg.probe.kind not in mdef.probe_kinds:
            raise SpecError(
                f"metric {m.name!r} needs probe kind {' or '.join(sorted(mdef.probe_kinds))}, "
                f"the spec has {cfg.probe.kind!r}",
                file=spec_file, key="probe.kind",
            )
        if mdef.check is not None:
            problem = mdef.check(params, cfg.probe.kind)
            if problem:
                raise SpecError(problem, file=spec_file, key=f"metrics[{i}]",
                                hint="match the metric mode and `probe.kind`")
        if mdef.check_spec is not None:
            try:
                spec_problem = mdef.check_spec(params, cfg)
            except MetricLabelError as exc:  # a label parameter, keyed within the metric's entry
                raise SpecError(exc.message, file=spec_file, key=f"metrics[{i}].{exc.key}", hint=exc.hint) from None
            except SpecError as exc:  # keyed from the spec's top (e.g. a threshold)
                if exc.file is not None:
                    raise
                raise SpecError(exc.message, file=spec_file, key=exc.key, hint=exc.hint) from None
            if spec_problem:
                msg, hint = (spec_problem if isinstance(spec_problem, tuple)
                             else (spec_problem, "move it to the coding layer it belongs to"))
                raise SpecError(msg, file=spec_file, key=f"metrics[{i}]", hint=hint)
        if m.key in out:
            raise SpecError(f"two metrics share the id {m.key!r}", file=spec_file,
                            key=f"metrics[{i}]", hint="give one of them an `id`")
        out[m.key] = params
    return out


def _check_bounds(t: ThresholdSpec, bounds: tuple[tuple[str, tuple[float, float] | None], ...],
                  spec_file: str | None, key: str) -> None:
    """A bound outside the estimate's range could never be met (or never missed): most
    likely a scale mix-up (50 for a rate in [0, 1])."""
    est = t.metric.partition(".")[2]
    rng = next((r for pat, r in bounds if (pat == est if pat == "" else fnmatch.fnmatchcase(est, pat))), None)
    if rng is None:
        return
    lo, hi = rng
    if t.over == "spread":  # the range of per-cell values
        lo, hi = 0.0, hi - lo
    sides = [("min", t.min), ("max", t.max)] if t.equivalence is None else \
        [("equivalence.low", t.equivalence.low), ("equivalence.high", t.equivalence.high)]
    for side, v in sides:
        if v is not None and not lo <= v <= hi:
            raise SpecError(f"{side} {v:g} is outside the range of {t.metric!r} ({lo:g} to {hi:g}"
                            f"{' for a spread' if t.over == 'spread' else ''})", file=spec_file,
                            key=f"{key}.{side}", hint=f"give a value between {lo:g} and {hi:g}")


def parity_warnings(cfg: AuditConfig, params: dict[str, BaseModel]) -> list[str]:
    """A threshold that bounds an estimate on both sides claims parity: its band must
    contain the value the estimate takes when there is no bias (the method's `no_bias`),
    or a model with no bias at all would FAIL it, most likely a scale mix-up (a band
    about 0 on a score centred at 50, or about 50 on a ratio). One line per threshold,
    naming the estimate's scale; sanity checks and spreads are not parity claims."""
    from biasaudit.metrics.base import no_bias_of

    names = {m.key: m.name for m in cfg.metrics}
    out = []
    for i, t in enumerate(cfg.thresholds):
        lo, hi = t.band
        if t.sanity or t.over == "spread" or lo is None or hi is None:
            continue
        mid, _, est = t.metric.partition(".")
        if mid not in names:
            continue
        headline = getattr(params.get(mid), "headline", None)
        nb = no_bias_of(METRICS.get(names[mid]), est or (headline if isinstance(headline, str) else ""))
        if nb is None and not est:
            nb = no_bias_of(METRICS.get(names[mid]), "")
        if nb is None or lo <= nb.value <= hi:
            continue
        out.append(f"thresholds[{i}] ({t.metric}): the band [{lo:g}, {hi:g}] does not contain {nb.value:g}, the value "
                   f"of {t.metric} when there is no bias (its scale: {nb.scale}), so a model with no bias would FAIL "
                   f"it; centre the band on {nb.value:g}, or drop `min` or `max` if this is not a parity claim")
    return out


GROUP_VARS = ("group",)
"""Level variables read as a cell's group when no metric names its own (`*group_var`)."""


def level_groups(cfg: AuditConfig, params: dict[str, BaseModel]) -> dict[str, dict[str, str]]:
    """Factor -> level -> the group that level's cells are counted in (the level variable
    a metric reads as the group: a `*group_var` parameter, or `group`), for the factors
    whose levels set one: what `validate` prints and the report's method section lists,
    so a person can see a name put in the wrong group ("sarah: male")."""
    names = set(GROUP_VARS)
    for p in params.values():
        for fld, value in p:
            if fld.endswith("group_var") and isinstance(value, str):
                names.add(value)
    out: dict[str, dict[str, str]] = {}
    for factor, levels in cfg.factors.items():
        var = next((n for n in sorted(names) if any(n in lv.vars for lv in levels.values())), None)
        if var is not None:
            out[factor] = {level: str(lv.vars.get(var, "(none)")) for level, lv in levels.items()}
    return out


def apply_limits(limits: RuntimeLimits) -> None:
    """The operator's bounds for everything this process renders from now on."""
    from biasaudit.spec.templates import configure

    configure(limits.template_chars, limits.template_steps, limits.template_seconds)


def coding_plan(cfg: AuditConfig, params: dict[str, BaseModel], field_names: set[str],
                spec_file: str | None) -> CodingPlan:
    """The spec's coding layers (or, when it declares none, its metrics' defaults),
    checked; and every layer a metric reads exists."""
    defaults: dict[str, CodingLayerSpec] = {}
    default_pairs: list[ReliabilityPairSpec] = []
    if not cfg.coding:
        for m in cfg.metrics:
            mdef = METRICS.get(m.name)
            if mdef.default_coding is None:
                continue
            default = mdef.default_coding(params[m.key], cfg)
            for name, layer in default.layers.items():
                if name in defaults and defaults[name] != layer:
                    raise SpecError(f"two metrics need different default layers called {name!r}", file=spec_file,
                                    key="coding", hint="declare the layers in a `coding:` section")
                defaults[name] = layer
            default_pairs += [p for p in default.reliability if p not in default_pairs]
    plan = compile_coding(cfg, field_names, spec_file, defaults, default_pairs)
    for compiled in plan.layers.values():
        check_routes(compiled)  # the models a layer's requests go to exist and can answer them
    for i, m in enumerate(cfg.metrics):
        for param, layer_name in METRICS.get(m.name).layers(params[m.key]).items():
            if layer_name in plan.layers:
                continue
            if plan.defaults:
                continue  # a default layer the spec's design does not call for (e.g. no selection task)
            raise SpecError(f"metric {m.name!r} reads coding layer {layer_name!r}, which the spec does not declare",
                            file=spec_file, key=f"metrics[{i}].{param}",
                            hint=f"layers: {', '.join(plan.layers) or '(none)'}; declare it under `coding:`, or "
                                 "remove `coding:` to get the metric's default layers")
    return plan


def check_breakdowns(cfg: AuditConfig, params: dict[str, BaseModel], fields: set[str], source: str | None,
                     spec_file: str | None) -> None:
    """Every `by:` column of every metric is a field of the stimuli: a missing column
    would otherwise become one group named "" and the breakdown would silently say nothing.
    The exception is a metadata column the stimulus format declares optional (annotated
    copies carry it, the published file does not, e.g. WinoQueer-NLI's `identity`): that
    breakdown is skipped with a warning here and a note in the report, where
    `metrics.disaggregate.by_group` gives it one no-data row that says so."""
    optional = set(ADAPTERS.get(cfg.stimuli.format).optional) if cfg.stimuli.format in ADAPTERS else set()
    for i, m in enumerate(cfg.metrics):
        for j, fld in enumerate(getattr(params.get(m.key), "by", None) or []):
            if fld not in fields and fld in optional:
                log.warning("metric %r breaks down by %r, a column this %s file does not have: that breakdown is "
                            "skipped (the report says so)", m.key, fld, cfg.stimuli.format)
            elif fld not in fields:
                raise SpecError(f"metric {m.key!r} breaks down by {fld!r}, a column the data does not have",
                                file=source or spec_file, key=f"metrics[{i}].by[{j}]",
                                hint=f"columns: {', '.join(sorted(fields)) or '(none)'}; remove {fld!r} from `by`"
                                     + (" (it is the metric's default: set `by: []`)"
                                        if "by" not in params[m.key].model_fields_set else "")
                                     + _plain_hint(cfg))


def _plain_hint(cfg: AuditConfig) -> str:
    """A published format keeps only the fields the method reads: the way to group by
    another of the file's columns is a plain csv with the method's field names."""
    if cfg.stimuli.format in (None, "csv", "jsonl"):
        return ""
    return (f"; or, to group by a column the {cfg.stimuli.format} format drops, give the data as `format: csv` "
            f"with the field names listed in docs/methods/{cfg.audit.method}.md (Grouping by a column the "
            "published format drops)")


def check_config(cfg: AuditConfig, spec_file: str | None, choices: dict[str, str]) -> dict[str, BaseModel]:
    params = metric_params(cfg, spec_file)
    # the method family names a registered method (its report text and defaults come from
    # it); after the metrics, whose own error names the plugin a missing method comes from
    METHODS.get(cfg.audit.method, file=spec_file, key="audit.method")
    if cfg.probe.max_tokens > cfg.runtime.limits.max_tokens:
        raise SpecError(f"probe.max_tokens is {cfg.probe.max_tokens}, over the limit of "
                        f"{cfg.runtime.limits.max_tokens}", file=spec_file, key="probe.max_tokens",
                        hint="ask for fewer tokens, or raise runtime.limits.max_tokens")
    check_audit_support(cfg, choices)
    for i, t in enumerate(cfg.thresholds):
        mid = t.metric.partition(".")[0]
        if mid not in params:
            raise SpecError(
                f"threshold on metric {mid!r}, which the spec does not compute",
                file=spec_file, key=f"thresholds[{i}].metric",
                hint=f"metrics: {', '.join(params)}",
            )
    names = {m.key: m.name for m in cfg.metrics}
    for i, t in enumerate(cfg.thresholds):
        _check_bounds(t, METRICS.get(names[t.metric.partition(".")[0]]).bounds, spec_file, f"thresholds[{i}]")
    for i, t in enumerate(cfg.thresholds):
        if t.over != "pooled" and len(cfg.factors) == 0:
            raise SpecError(f"`over: {t.over}` needs a design with prompt conditions; this spec has one cell",
                            file=spec_file, key=f"thresholds[{i}].over", hint="use `over: pooled` or add factors")
    from biasaudit.report.crosswalk import check_refs

    check_refs([(f"thresholds[{i}].refs[{j}]", r) for i, t in enumerate(cfg.thresholds) for j, r in enumerate(t.refs)],
               cfg.report.crosswalk, spec_file)
    if "pdf" in cfg.report.formats:
        from biasaudit.report.pdf import find_chromium

        if find_chromium() is None:
            raise SpecError("report format pdf needs headless Chromium, which is not installed", file=spec_file,
                            key="report.formats", hint="install it (Debian: apt-get install chromium) or drop pdf")
    return params
