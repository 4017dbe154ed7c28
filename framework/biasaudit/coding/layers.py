"""Compile a spec's `coding:` and `reliability:` sections into a `CodingPlan`: every
layer checked (its coder, its options by the coder's own model, its input, labels,
fallback and strip references, the models its requests go to) and put in dependency
order, before any model call. A spec without `coding:` gets its metrics' default layers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, ValidationError

from biasaudit.coding.base import Coder, CoderDef, CoderEnv
from biasaudit.coding.label_check import check_labels, plan_labels, unknown_label
from biasaudit.errors import SpecError
from biasaudit.registry import CODERS
from biasaudit.spec import AuditConfig, CodingLayerSpec, ReliabilityPairSpec
from biasaudit.spec.errors_format import describe

ROUTE_HINT = "routes: subject, judge:<name>, nli, nli_chat, embedder"


@dataclass(frozen=True)
class Input:
    kind: Literal["response", "field", "layer"]
    name: str = ""
    """The output field (`field`) or the layer (`layer`)."""


@dataclass(frozen=True)
class Layer:
    name: str
    spec: CodingLayerSpec
    coder_name: str
    coder_def: CoderDef
    options: BaseModel
    env: CoderEnv
    input: Input
    labels: tuple[str, ...] | None
    """The label set (None: a value layer, or labels only known from the codes)."""
    value_type: Literal["label", "number"]
    fallback_of: str | None = None
    """The layer this one is the fallback of (it codes only that layer's abstentions)."""

    @property
    def endorse(self) -> frozenset[str] | None:
        return frozenset(self.spec.endorse) if self.spec.endorse is not None else None

    @property
    def depends(self) -> list[str]:
        deps = [self.input.name] if self.input.kind == "layer" else []
        if self.spec.strip:
            deps.append(self.spec.strip)
        return deps

    def build(self) -> Coder:
        return self.coder_def.build(self.env, self.options)


@dataclass(frozen=True)
class ReliabilityPair:
    a: str
    b: str
    map_a: Mapping[str, str] = field(default_factory=dict)
    map_b: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.a} vs {self.b}"


@dataclass(frozen=True)
class CodingPlan:
    layers: dict[str, Layer]
    """Every layer, in dependency order."""
    pairs: list[ReliabilityPair]
    defaults: bool = False
    """The layers are the metrics' defaults (the spec declares none)."""

    @property
    def primary(self) -> list[str]:
        """Layers the stage codes on every unit (fallback layers code only what their
        primary leaves)."""
        return [n for n, lay in self.layers.items() if lay.fallback_of is None]


def parse_input(text: str, file: str | None, key: str) -> Input:
    if text == "response":
        return Input("response")
    head, _, rest = text.partition(".")
    if head == "response" and rest:
        return Input("field", rest)
    kind, _, name = text.partition(":")
    if kind == "layer" and name:
        return Input("layer", name)
    raise SpecError(f"unknown input {text!r}", file=file, key=key,
                    hint="`response`, `response.<output field>` or `layer:<name>`")


def coder_options(cdef: CoderDef, spec: CodingLayerSpec, file: str | None, key: str) -> BaseModel:
    try:
        return cdef.options.model_validate(spec.options(), strict=True)  # as spec.models.Strict
    except ValidationError as exc:
        path, msg, hint = describe(exc, cdef.options)[0]
        if "unknown key" in msg and hint is not None:
            hint += "; every layer also takes coder, input, labels, endorse, fallback, strip, calibration, expect_dominant, require_calibration"
        raise SpecError(msg, file=file, key=f"{key}.{path}" if path else key, hint=hint) from None


def template_variables(cfg: AuditConfig, field_names: set[str]) -> frozenset[str]:
    level_vars = {k for lv in cfg.factors.values() for level in lv.values() for k in level.vars}
    return frozenset(field_names | level_vars | {"levels", "stimulus_id"})


def compile_layer(name: str, spec: CodingLayerSpec, cfg: AuditConfig, file: str | None,
                  variables: frozenset[str]) -> Layer:
    key = f"coding.{name}"
    cdef = CODERS.get(spec.coder, file=file, key=f"{key}.coder")
    options = coder_options(cdef, spec, file, key)
    env = CoderEnv(layer=name, spec=spec, config=cfg, spec_file=file, variables=variables)
    if cdef.check is not None:
        cdef.check(env, options)
    implied = cdef.labels(env, options)
    value_type = cdef.value_type(env, options)
    labels = tuple(spec.labels) if spec.labels is not None else (tuple(implied) if implied is not None else None)
    if spec.labels is not None and implied is not None and not set(implied) <= set(spec.labels):
        extra = sorted(set(implied) - set(spec.labels))
        raise SpecError(f"the coder can give {extra[0]!r}, which `labels` does not list", file=file,
                        key=f"{key}.labels", hint=f"labels the options give: {', '.join(implied)}")
    if spec.endorse is not None:
        if labels is None:
            raise SpecError("`endorse` needs the layer's `labels`", file=file, key=f"{key}.endorse",
                            hint="list the labels, e.g. labels: [E, N, D, R]")
        check_labels(spec.endorse, labels, name, "`endorse` names", file=file, key=f"{key}.endorse")
    return Layer(name=name, spec=spec, coder_name=spec.coder, coder_def=cdef, options=options, env=env,
                 input=parse_input(spec.input, file, f"{key}.input"), labels=labels, value_type=value_type)


def _chains(layers: Mapping[str, Layer]) -> dict[str, list[str]]:
    """Primary layer -> it and its fallbacks, in the order they code: the stage codes a
    fallback while it codes its primary (only the units the primary abstained on)."""
    out: dict[str, list[str]] = {}
    for n, lay in layers.items():
        if lay.fallback_of is None:
            chain = [n]
            while (fb := layers[chain[-1]].spec.fallback) is not None:
                chain.append(fb)
            out[n] = chain
    return out


def _order(layers: dict[str, Layer], file: str | None) -> list[str]:
    """Dependency order: a layer's inputs and strip sources first; a fallback right after
    its primary, whatever order the spec declares them in. A fallback is coded with its
    primary, so what a fallback reads must be coded before its primary, and a layer that
    reads a fallback comes after that fallback's primary."""
    chains = _chains(layers)
    primary_of = {m: p for p, chain in chains.items() for m in chain}
    done: list[str] = []
    visiting: set[str] = set()

    def visit(p: str, path: list[str], name: str) -> None:
        if p in done:
            return
        if p in visiting:
            raise SpecError(f"coding layers depend on each other in a circle: {' -> '.join([*path, name])}",
                            file=file, key=f"coding.{name}", hint="a layer's input or strip must be coded before it")
        visiting.add(p)
        for m in chains[p]:
            for d in layers[m].depends:
                if primary_of[d] == p:
                    chain = " -> ".join(chains[p])
                    raise SpecError(f"layer {m!r} reads layer {d!r}, but both are coded in one step (the fallback "
                                    f"chain {chain}): a fallback codes its primary's abstentions while the primary "
                                    "is coded", file=file, key=f"coding.{m}.{'strip' if layers[m].spec.strip == d else 'input'}",
                                    hint="a layer in a fallback chain may read only layers outside that chain")
                visit(primary_of[d], [*path, m], d)
        visiting.discard(p)
        done.extend(chains[p])

    for n in layers:
        visit(primary_of[n], [], n)
    return done


def _check_refs(specs: Mapping[str, CodingLayerSpec], file: str | None) -> dict[str, str]:
    """Layer references exist; returns fallback layer -> its primary."""
    names = list(specs)
    fallback_of: dict[str, str] = {}
    for n, s in specs.items():
        for attr in ("fallback", "strip"):
            ref = getattr(s, attr)
            if ref is None:
                continue
            if ref not in specs:
                raise SpecError(f"`{attr}` names layer {ref!r}, which the spec does not declare", file=file,
                                key=f"coding.{n}.{attr}", hint=f"layers: {', '.join(names)}")
            if ref == n:
                raise SpecError(f"a layer cannot be its own {attr}", file=file, key=f"coding.{n}.{attr}")
        if s.fallback is not None:
            if s.fallback in fallback_of:
                raise SpecError(f"layer {s.fallback!r} is already the fallback of {fallback_of[s.fallback]!r}",
                                file=file, key=f"coding.{n}.fallback", hint="declare a second layer")
            fallback_of[s.fallback] = n
        if s.input.startswith("layer:") and s.input[6:] not in specs:
            raise SpecError(f"input names layer {s.input[6:]!r}, which the spec does not declare", file=file,
                            key=f"coding.{n}.input", hint=f"layers: {', '.join(names)}")
    for n in specs:  # each layer has at most one fallback and serves at most one: a chain, or a circle
        path = [n]
        while (fb := specs[path[-1]].fallback) is not None and fb not in path:
            path.append(fb)
        if fb == n:
            raise SpecError(f"fallbacks form a circle: {' -> '.join([*path, n])}", file=file,
                            key=f"coding.{n}.fallback", hint="the last layer of a fallback chain has no fallback")
    return fallback_of


def _pairs(cfg: AuditConfig, layers: dict[str, Layer], reliability: Sequence[ReliabilityPairSpec] | str,
           file: str | None) -> list[ReliabilityPair]:
    if reliability == "all":
        labelled = [n for n, lay in layers.items() if lay.labels is not None and lay.fallback_of is None]
        return [ReliabilityPair(a, b) for i, a in enumerate(labelled) for b in labelled[i + 1:]
                if set(layers[a].labels or ()) == set(layers[b].labels or ())]
    out = []
    for i, p in enumerate(reliability):
        assert isinstance(p, ReliabilityPairSpec)
        for j, n in enumerate(p.pair):
            if n not in layers:
                raise SpecError(f"reliability pair names layer {n!r}, which the spec does not declare", file=file,
                                key=f"reliability[{i}].pair[{j}]", hint=f"layers: {', '.join(layers)}")
            if layers[n].value_type != "label":
                raise SpecError(f"layer {n!r} gives numbers, not labels: agreement needs labels", file=file,
                                key=f"reliability[{i}].pair[{j}]")
        if p.pair[0] == p.pair[1]:
            raise SpecError("a reliability pair needs two different layers", file=file, key=f"reliability[{i}].pair")
        for n in p.map:
            if n not in p.pair:
                raise SpecError(f"`map` names {n!r}, which is not in the pair", file=file,
                                key=f"reliability[{i}].map.{n}", hint=f"the pair: {', '.join(p.pair)}")
        a, b = p.pair
        _check_map(p, layers, file, f"reliability[{i}]")
        out.append(ReliabilityPair(a, b, dict(p.map.get(a, {})), dict(p.map.get(b, {}))))
    return out


def _check_map(p: ReliabilityPairSpec, layers: Mapping[str, Layer], file: str | None, key: str) -> None:
    """A pair's `map` takes labels its layer can give (keys) onto labels the other layer
    can give, after its own map (values); layers with an open label set are not checked."""
    for n, mapping in p.map.items():
        other = p.pair[1] if n == p.pair[0] else p.pair[0]
        mine, theirs = plan_labels(layers, n), plan_labels(layers, other)
        shared = None if theirs is None else list(dict.fromkeys(p.map.get(other, {}).get(x, x) for x in theirs))
        for lab, to in mapping.items():
            check_labels(lab, mine, n, "`map` names", file=file, key=f"{key}.map.{n}.{lab}")
            if shared is not None and to not in shared:
                raise unknown_label(to, shared, other, f"`map` takes {lab!r} onto", file=file,
                                    key=f"{key}.map.{n}.{lab}", after_map=other in p.map)


def compile_coding(cfg: AuditConfig, field_names: set[str], file: str | None,
                   defaults: Mapping[str, CodingLayerSpec] | None = None,
                   default_reliability: Sequence[ReliabilityPairSpec] = ()) -> CodingPlan:
    """Check and order the layers. `defaults` (the metrics' default layers) are used when
    the spec declares no layers; their errors name the metric's defaults."""
    use_defaults = not cfg.coding and bool(defaults)
    if use_defaults:
        assert defaults is not None
        specs = dict(defaults)
        reliability: Sequence[ReliabilityPairSpec] | str = cfg.reliability if cfg.reliability else default_reliability
    else:
        specs = dict(cfg.coding)
        reliability = cfg.reliability
    fallback_of = _check_refs(specs, file)
    variables = template_variables(cfg, field_names)
    compiled = {n: compile_layer(n, s, cfg, file, variables) for n, s in specs.items()}
    compiled = {n: replace(lay, fallback_of=fallback_of.get(n)) for n, lay in compiled.items()}
    ordered = {n: compiled[n] for n in _order(compiled, file)}
    return CodingPlan(layers=ordered, pairs=_pairs(cfg, ordered, reliability, file), defaults=use_defaults)


__all__ = ["CodingPlan", "Input", "Layer", "ReliabilityPair", "compile_coding", "parse_input", "template_variables"]
