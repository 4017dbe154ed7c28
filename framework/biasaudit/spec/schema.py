"""JSON Schemas (draft 2020-12) for editors: a spec *file*, a suite file, and the composed
run configuration.

A spec file's schema is the spec language as written by an auditor: the operator's groups
(`model`, `judge`, `nli`, `embedder`, `runtime`) are left out, since a spec cannot set
them, and metrics and coding layers are discriminated unions (by `name` and by `coder`)
whose members carry each registered metric's and coder's own typed parameters, so an
editor completes and checks `mode: ar_full` under `name: bias_score`. The schemas are
built from the same Pydantic models that validate a run, so they cannot drift from it;
the copies committed under docs/schema/ are checked against them by a test.

What the schema cannot know (a factor's levels, a layer's labels, a data file's columns)
is checked by `biasaudit validate`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# Identifiers, not addresses: no server hosts them. Editors find the files through the
# `# yaml-language-server: $schema=<path>` line of each spec, relative to the spec.
IDS = {
    "spec": "urn:biasaudit:schema:spec:1",
    "suite": "urn:biasaudit:schema:suite:1",
    "config": "urn:biasaudit:schema:config:1",
    "plots": "urn:biasaudit:schema:plots:1",
}
KINDS = tuple(IDS)
SCHEMA_FILES = {"spec": "spec.schema.json", "suite": "suite.schema.json"}
"""Committed under docs/schema/ (and shipped in the wheel beside the specs)."""

# OmegaConf interpolation `${key}`: a spec may write one wherever a number or a flag goes
# (the text is checked by the spec sandbox, then resolved before validation).
INTERPOLATION = {"type": "string", "pattern": r"^\$\{[^{}]+\}$",
                 "description": "An interpolation `${key.path}` of another key of the spec"}


def _metric_models() -> list[type[BaseModel]]:
    from biasaudit.registry import METRICS

    out = []
    for name, mdef in METRICS.items():
        fields: dict[str, Any] = {
            "name": (Literal[name], Field(description="The registered metric (`biasaudit list metrics`).")),
            "id": (str | None, Field(default=None, description="The name thresholds and reports use for this "
                                                                "metric (default: `name`; required when a metric "
                                                                "is used twice).")),
        }
        out.append(create_model(f"Metric_{name}", __base__=mdef.params, __doc__=f"Metric `{name}`: {mdef.title}.",
                                **fields))
    return out


def _coder_models() -> list[type[BaseModel]]:
    from biasaudit.registry import CODERS
    from biasaudit.spec import CodingLayerSpec

    common = {k: (f.annotation, f) for k, f in CodingLayerSpec.model_fields.items() if k != "coder"}
    out = []
    for name, cdef in CODERS.items():
        opts = cdef.options
        fields: dict[str, Any] = {
            "coder": (Literal[name], Field(description="The registered coder (`biasaudit list coders`).")),
            **{k: v for k, v in common.items() if k not in opts.model_fields},
        }
        out.append(create_model(f"Coding_{name}", __base__=opts,
                                __doc__=f"A coding layer with coder `{name}`: {cdef.title}.", **fields))
    return out


def _plot_models() -> list[type[BaseModel]]:
    """Each registered plot kind's data model, tagged by its `kind` (what a method's report
    section may put in a `PlotSpec`)."""
    from biasaudit.registry import PLOTS

    out = []
    for name, pk in PLOTS.items():
        fields: dict[str, Any] = {"kind": (Literal[name], Field(description="The registered plot kind."))}
        out.append(create_model(f"Plot_{name}", __base__=pk.data, __doc__=f"Plot kind `{name}`: {pk.title}.", **fields))
    return out


def _one_of(models: list[type[BaseModel]], key: str) -> Any:
    if len(models) == 1:
        return models[0]
    return Annotated[Union[tuple(models)], Field(discriminator=key)]  # noqa: UP007 (a runtime tuple)


def spec_file_model() -> type[BaseModel]:
    """The spec file's model: `AuditConfig` without the operator's groups, with metrics and
    coding layers typed per registered name."""
    from biasaudit.spec import AuditConfig
    from biasaudit.spec.load import GROUP_KEYS

    metric = _one_of(_metric_models(), "name")
    layer = _one_of(_coder_models(), "coder")
    fields: dict[str, Any] = {}
    for k, f in AuditConfig.model_fields.items():
        if k in GROUP_KEYS:
            continue
        if k == "metrics":
            fields[k] = (list[metric], Field(description=f.description, min_length=1))  # type: ignore[valid-type]
        elif k == "coding":
            fields[k] = (dict[str, layer], Field(default_factory=dict, description=f.description))  # type: ignore[valid-type]
        else:
            fields[k] = (f.annotation, f)
    return create_model(
        "SpecFile", __config__=ConfigDict(extra="forbid"),
        __doc__="A biasaudit audit spec file: what to ask, how to code the answers, what to measure and "
                "which thresholds to judge. The model, judges, NLI backend, embedder and run-time settings "
                "are the operator's (conf/ and the command line), not the spec's.",
        **fields,
    )


def suite_file_model() -> type[BaseModel]:
    from biasaudit.spec.suite import SuiteSpec

    return create_model(
        "SuiteFile", __config__=ConfigDict(extra="forbid"),
        __doc__="A biasaudit suite file: several audit specs run against the same models, one combined report.",
        suite=(SuiteSpec, Field(description="The suite: its members (specs) and subjects (models).")),
    )


def _allow_interpolation(node: Any) -> Any:
    """Let every number, integer and flag be written as `${...}` as well."""
    if isinstance(node, list):
        return [_allow_interpolation(x) for x in node]
    if not isinstance(node, dict):
        return node
    node = {k: (v if k in ("discriminator", "const", "enum", "default", "examples")
                else _allow_interpolation(v)) for k, v in node.items()}
    if node.get("type") in ("integer", "number", "boolean"):
        keep = {k: node.pop(k) for k in ("description", "title", "default") if k in node}
        return {**keep, "anyOf": [node, {"$ref": "#/$defs/Interpolation"}]}
    return node


def json_schema(kind: str = "spec") -> dict[str, Any]:
    """The JSON Schema of `kind`: `spec` (a spec file), `suite` (a suite file), `config`
    (the composed configuration of a run, operator groups included: the registered
    backends' model configs) or `plots` (the registered plot kinds' data)."""
    if kind not in IDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    if kind == "plots":
        # the plot kinds' data: not a file anyone writes, but what a plug-in's or a method's
        # report section may ask the report to draw
        from pydantic import TypeAdapter

        body = TypeAdapter(_one_of(_plot_models(), "kind")).json_schema(mode="validation")
        return {"$schema": DIALECT, "$id": IDS[kind], "title": "biasaudit plot kinds", **body}
    if kind == "config":
        from biasaudit.spec import AuditConfig

        model: type[BaseModel] = AuditConfig
    else:
        model = spec_file_model() if kind == "spec" else suite_file_model()
    body = model.model_json_schema(mode="validation")
    if kind == "spec":
        body = _allow_interpolation(body)
        body.setdefault("$defs", {})["Interpolation"] = INTERPOLATION
    body.pop("title", None)
    titles = {"spec": "biasaudit audit spec file", "suite": "biasaudit suite file",
              "config": "biasaudit composed run configuration"}
    return {"$schema": DIALECT, "$id": IDS[kind], "title": titles[kind], **body}


def schema_text(schema: dict[str, Any]) -> str:
    """A schema as `biasaudit schema` prints it and docs/schema/ holds it."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def undocumented(schema: dict[str, Any]) -> list[str]:
    """Paths of properties that have no description (there should be none)."""
    missing: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for name, prop in (node.get("properties") or {}).items():
                if not isinstance(prop, dict) or not prop.get("description"):
                    missing.append(f"{path}.{name}")
            for k, v in node.items():
                walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk(schema, "#")
    return missing


__all__ = ["DIALECT", "IDS", "KINDS", "SCHEMA_FILES", "json_schema", "schema_text", "spec_file_model", "suite_file_model",
           "undocumented"]
