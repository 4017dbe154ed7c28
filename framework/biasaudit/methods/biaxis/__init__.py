"""BiAxisAudit: metric `biaxis` over a selection and an elaboration coding layer, and
the default split coding (coding.yaml) a spec without `coding:` gets."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from biasaudit.coding.label_check import config_labels
from biasaudit.errors import SpecError
from biasaudit.methods.base import MethodDef, MethodText
from biasaudit.methods.biaxis import plot as _plot  # noqa: F401  (registers the reliability_map plot kind)
from biasaudit.methods.biaxis.metric import BiaxisParams, check, compute
from biasaudit.methods.biaxis.oracle import ORACLE
from biasaudit.methods.biaxis.report import present
from biasaudit.metrics.base import DefaultCoding, MetricDef
from biasaudit.registry import METHODS, METRICS, ORACLES
from biasaudit.spec import AuditConfig

SELECTION_TASKS = ("bj", "sc", "cto", "rate")


@cache
def shipped_coding() -> dict[str, Any]:
    """coding.yaml: the layers and reliability pair, as a spec would declare them."""
    data: dict[str, Any] = yaml.safe_load((Path(__file__).parent / "coding.yaml").read_text(encoding="utf-8"))
    return data


def default_coding(params: BaseModel, cfg: AuditConfig) -> DefaultCoding:
    """The shipped layers, fitted to the spec: the selection rules and parser questions
    of the task levels it has (none: no selection layer, A = 0 everywhere), the parser
    only with `parser: true`, and the judges' answer words when the panel names none."""
    assert isinstance(params, BiaxisParams)
    data = copy.deepcopy(shipped_coding())
    layers: dict[str, dict[str, Any]] = data["coding"]
    sel, parser, elab = layers["selection"], layers["selection_parser"], layers["elaboration"]
    tasks = [lv for lv in cfg.factors.get(params.task_factor, {}) if lv in SELECTION_TASKS]
    out: dict[str, dict[str, Any]] = {}
    pairs: list[dict[str, Any]] = []
    if tasks:
        sel["by"] = parser["by"] = params.task_factor
        sel["levels"] = {t: sel["levels"][t] for t in tasks}
        parser["levels"] = {t: parser["levels"][t] for t in tasks}
        if params.parser:
            out[params.selection] = {**sel, "fallback": f"{params.selection}_parser"}
            out[f"{params.selection}_parser"] = parser
        else:
            out[params.selection] = {k: v for k, v in sel.items() if k != "fallback"}
        pairs = [{"pair": [params.selection, params.elaboration], "map": {params.elaboration: {"QE": "E"}}}]
    if cfg.judge is not None and not cfg.judge.labels:
        elab["answers"] = {"E": "A", "QE": "B", "N": "C", "D": "D", "R": "E"}
    if params.calibration is not None:
        elab["calibration"] = params.calibration.model_dump()
    if params.selection in out:
        elab["strip"] = params.selection
    else:
        elab.pop("strip", None)
    out[params.elaboration] = elab
    return DefaultCoding.of(out, pairs)


def _layers(p: BaseModel) -> dict[str, str]:
    assert isinstance(p, BiaxisParams)
    return {"selection": p.selection, "elaboration": p.elaboration}


DEFAULT_ENDORSE = {"selection": ("E",), "elaboration": ("E", "QE")}
"""The labels the metric reads as endorsing on a layer without `endorse` (metric.code_all)."""


def check_spec(params: BaseModel, cfg: AuditConfig) -> str | None:
    assert isinstance(params, BiaxisParams)
    if params.calibration is not None and cfg.coding:
        return "`calibration` here configures the default elaboration layer; this spec declares its layers"
    for param, default in DEFAULT_ENDORSE.items():
        name = getattr(params, param)
        spec = cfg.coding.get(name)
        labels = config_labels(cfg, name) if spec is not None and spec.endorse is None else None
        if labels is not None and not set(default) & set(labels):  # it would never read as endorsing
            raise SpecError(f"layer {name!r} has no `endorse`, and gives none of the labels the metric then reads as "
                            f"endorsing ({', '.join(default)})", key=f"coding.{name}",
                            hint=f"give the layer `endorse:` with some of its labels: {', '.join(labels)}")
    return None


METRICS.add("biaxis", MetricDef(compute=compute, params=BiaxisParams, probe_kinds=frozenset({"generate"}),
                                title="BiAxisAudit", method="biaxis", check=check, layers=_layers,
                                default_coding=default_coding, check_spec=check_spec,
    bounds=(("dni", (-1.0, 1.0)), ("contrast.*", (-1.0, 1.0)), ("*", (0.0, 1.0))), present=present))
METHODS.add("biaxis", MethodDef(
    name="biaxis",
    metrics=("biaxis",),
    text=MethodText(
        name="BiAxisAudit prompt grid with split coding",
        source="Gan, Dong and Li, 'BiAxisAudit: A Novel Framework to Evaluate LLM Bias Across Prompt Sensitivity "
               "and Response-Layer Divergence'.",
        computes="Statements are asked under a grid of prompt conditions (task, perspective, role, sentiment). "
                 "Each answer is coded on two layers: the selection (what the answer chooses, by rules with an "
                 "LLM parser fallback) and the elaboration (what the text endorses, by a judge panel). BER_sel, "
                 "BER_elab and BER_union are endorsement rates; IR is the share where the layers disagree and "
                 "DNI = BER_sel - BER_elab its direction.",
        reading="BER_union is the deployment gate (lower is better). Spread across conditions shows how much "
                "the number depends on the prompt. Per-cell Wilson intervals; pooled intervals are clustered by "
                "statement (Wilson on the effective sample size; DNI by the cluster-robust t interval).",
    ),
))
ORACLES.add("biaxis", ORACLE)
