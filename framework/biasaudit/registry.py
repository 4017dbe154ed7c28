"""The one registry of named, pluggable things: methods, metrics, coders, model backends
(each with its config model), NLI classifiers and sentence embedders (each with its config
model), plot kinds (each with its data model), stimulus adapters, recorded-response
formats and template functions.

Specs name registered things; they never carry import paths. Providers register on
import. The core's own providers (backends, adapters, coders) register when their
package is imported; the methods are the subpackages of `biasaudit.methods`; third-party
packages declare a module in the `biasaudit.plugins` entry-point group. Methods and
plugins are imported lazily: the first time a lookup misses (or a listing is asked for),
every provider is imported once. Unknown names fail with a "did you mean" suggestion.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import pkgutil
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from biasaudit.errors import SpecError
from biasaudit.records.codes import CodeDetail, set_evidence_resolver

if TYPE_CHECKING:
    from biasaudit.backends.base import BackendKind
    from biasaudit.backends.embedder import EmbedderKind
    from biasaudit.backends.nli_kind import NLIKind
    from biasaudit.coding.base import CoderDef
    from biasaudit.coding.coders.claims import ClaimRecords
    from biasaudit.data.adapters import Adapter
    from biasaudit.methods.base import MethodDef, RecordingFormat
    from biasaudit.methods.oracle_kit import OracleDef
    from biasaudit.metrics.base import MetricDef
    from biasaudit.metrics.plotting import PlotKind

log = logging.getLogger(__name__)
T = TypeVar("T")

PLUGIN_GROUP = "biasaudit.plugins"
_loaded = False
_load_errors: list[str] = []


def strict_model(field: str) -> Callable[[str, object], None]:
    """A registration check: the entry's `field` (an options or parameter model that a
    spec's keys are read into) must refuse unknown keys, or a misspelt option in a spec
    would validate and be dropped without a word."""
    def check(name: str, obj: object) -> None:
        model = getattr(obj, field, None)
        extra = getattr(model, "model_config", {}).get("extra")
        if model is not None and extra != "forbid":
            raise ValueError(f"{name!r}: its {field} model {getattr(model, '__name__', model)!s} accepts unknown keys "
                             f"(extra={extra!r}); give it model_config = ConfigDict(extra=\"forbid\") so that a "
                             "misspelt key in a spec is an error")
    return check


def tagged_config(what: str, where: str) -> Callable[[str, object], None]:
    """A registration check for a kind chosen by a config's `backend` key (a model
    backend, an NLI classifier, an embedder): its config model refuses unknown keys, and
    its `backend` field is the one literal `name` (the tag that selects it in a spec)."""
    def check(name: str, kind: object) -> None:
        strict_model("config")(name, kind)
        config = getattr(kind, "config", None)
        field = getattr(config, "model_fields", {}).get("backend")
        if field is None or getattr(field.annotation, "__args__", None) != (name,):
            raise ValueError(f"{what} {name!r}: its config model {getattr(config, '__name__', config)!s} needs the "
                             f"field `backend: Literal[{name!r}]` (the key that selects it in {where})")
    return check


backend_check = tagged_config("backend", "a model config")
"""A model backend's registration check."""


def plot_check(name: str, kind: object) -> None:
    """A plot kind's registration check: its data model refuses unknown keys, and reads
    only fields the `PlotSpec` carrier has (a field it has not could never be filled)."""
    strict_model("data")(name, kind)
    from biasaudit.records.metric_result import PlotSpec

    data = getattr(kind, "data", None)
    foreign = sorted(set(getattr(data, "model_fields", {})) - set(PlotSpec.model_fields) - {"kind"})
    if foreign:
        raise ValueError(f"plot kind {name!r}: its data model {getattr(data, '__name__', data)!s} has fields "
                         f"{', '.join(foreign)} that a PlotSpec does not carry; use the PlotSpec's fields "
                         f"({', '.join(sorted(PlotSpec.model_fields))})")


class Registry(Generic[T]):
    def __init__(self, kind: str, check: Callable[[str, T], None] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._check = check

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            if self._check is not None:
                self._check(name, obj)
            self._items[name] = obj
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        self.register(name)(obj)

    def names(self) -> list[str]:
        load_providers()
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        load_providers()
        return sorted(self._items.items())

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            load_providers()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def suggest(self, name: str) -> str:
        names = self.names()
        close = difflib.get_close_matches(name, names, n=1)
        broken = f"; plugins that failed to load: {'; '.join(_load_errors)}" if _load_errors else ""
        if close:
            return f"did you mean {close[0]!r}? known: {', '.join(names)}{broken}"
        return f"known: {', '.join(names)}{broken}"

    def get(self, name: str, *, file: str | None = None, key: str | None = None) -> T:
        if name not in self._items:
            load_providers()
        try:
            return self._items[name]
        except KeyError:
            raise SpecError(
                f"unknown {self.kind} {name!r}", file=file, key=key, hint=self.suggest(name)
            ) from None


METHODS: Registry[MethodDef] = Registry("method")
METRICS: Registry[MetricDef] = Registry("metric", check=strict_model("params"))


def _strict_coder(name: str, obj: CoderDef) -> None:
    """A coder's options and its evidence record both refuse unknown keys."""
    strict_model("options")(name, obj)
    strict_model("evidence")(name, obj)


CODERS: Registry[CoderDef] = Registry("coder", check=_strict_coder)
BACKENDS: Registry[BackendKind[Any]] = Registry("model backend", check=backend_check)
NLI_KINDS: Registry[NLIKind[Any]] = Registry("NLI classifier", check=tagged_config("NLI classifier", "an nli config"))
"""`nli.backend` -> the kind that answers `classify_nli` requests (backends/nli_kind.py)."""
EMBEDDERS: Registry[EmbedderKind[Any]] = Registry("embedder", check=tagged_config("embedder", "an embedder config"))
"""`embedder.backend` -> the kind that turns texts into vectors (backends/embedder.py)."""
ADAPTERS: Registry[Adapter] = Registry("stimulus format")
RECORDINGS: Registry[RecordingFormat] = Registry("recorded-response format")
TEMPLATE_FUNCTIONS: Registry[Callable[..., Any]] = Registry("template function")
PLOTS: Registry[PlotKind[Any]] = Registry("plot kind", check=plot_check)
"""Plot kind -> its data model and renderer (metrics/plotting.py)."""
CLAIM_RECORDS: Registry[ClaimRecords] = Registry("recorded-claims format")
"""Published claims (and labels) a `claims` layer reads with `extract: recorded`."""
ORACLES: Registry[OracleDef] = Registry("self-test oracle")
"""Metric name -> its oracle responders for `biasaudit selftest` (methods/oracle_kit.py)."""


def _resolve_evidence(source: str, keys: frozenset[str]) -> type[CodeDetail]:
    """The evidence record of the coder that wrote a stored code: its `source` names it;
    a fallback's code (`fallback:<layer>`) or a line without a source reads into the first
    registered record (by coder name) that declares all of its keys."""
    if source in CODERS:
        return CODERS.get(source).evidence
    for _, cdef in CODERS.items():
        if keys <= frozenset(cdef.evidence.model_fields):
            return cdef.evidence
    return CodeDetail  # refuses the unknown keys, naming them


set_evidence_resolver(_resolve_evidence)


def load_plugin(module: str) -> None:
    """Import a provider module (it registers what it holds); the public way to add a
    method, coder or backend from code, e.g. in tests."""
    importlib.import_module(module)


def load_providers() -> None:
    """Import every provider once: the core packages, the built-in methods (subpackages
    of `biasaudit.methods`) and the modules of the `biasaudit.plugins` entry points."""
    global _loaded
    if _loaded:
        return
    _loaded = True  # set first: providers look names up while they import
    for core in ("biasaudit.backends", "biasaudit.data", "biasaudit.coding", "biasaudit.report.plots"):
        importlib.import_module(core)
    methods = importlib.import_module("biasaudit.methods")
    for info in sorted(pkgutil.iter_modules(methods.__path__), key=lambda m: m.name):
        if info.ispkg:
            importlib.import_module(f"biasaudit.methods.{info.name}")
    from importlib.metadata import entry_points

    for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
            if callable(obj):
                obj()
        except Exception as exc:  # a broken third-party plugin must not hide the others
            _load_errors.append(f"{ep.name} ({ep.value}): {type(exc).__name__}: {exc}")
            log.warning("biasaudit plugin %s could not be loaded: %s", ep.name, exc)


__all__ = [
    "ADAPTERS",
    "CLAIM_RECORDS",
    "BACKENDS",
    "CODERS",
    "EMBEDDERS",
    "METHODS",
    "METRICS",
    "NLI_KINDS",
    "ORACLES",
    "PLOTS",
    "PLUGIN_GROUP",
    "RECORDINGS",
    "Registry",
    "TEMPLATE_FUNCTIONS",
    "load_plugin",
    "load_providers",
]
