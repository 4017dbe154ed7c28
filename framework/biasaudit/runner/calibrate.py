"""`biasaudit calibrate`: code a labelled control set with any coding layer that has a
`calibration` section, and report each rater's accuracy (Wilson interval) and Cohen's
kappa against the gold labels: the layer itself, and for a judge panel each judge, so
a coder can be chosen by its agreement with humans before it codes an audit. Each rater
is shown beside the chance level, with kappa's interval, and flagged when it is not better
than chance; the result is kept in the cache, and a run whose layer uses a coder that
failed it says so and leaves the verdicts it feeds INCONCLUSIVE.

The control set's responses are coded as given (a layer's `strip` and `input` do not
apply: the text column is the input); its rows' columns are the template variables, and
`calibration.levels` sets the factor levels they answer (e.g. `{task: bj}` for rules and
questions that differ per task). A layer's fallback codes what it cannot, as in a run.

A filled annotation sheet (`biasaudit annotate export`, labelled by people) is a control
set too: `calibration: {source: review/stance.csv, text: answer, gold: label}`. Rows
with a blank gold label are left out and counted (`unlabelled`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from biasaudit._util.fileio import names_excerpt
from biasaudit._util.secrets import watch_config
from biasaudit.coding.calibration_record import rater_score, record
from biasaudit.coding.human_sheet import record_path, unsafe_cell
from biasaudit.coding.layers import CodingPlan, Input
from biasaudit.coding.routes import StoreAnswerer
from biasaudit.coding.stage import run_coding
from biasaudit.data import read_csv, resolve_source
from biasaudit.errors import DataError, SpecError
from biasaudit.records.codes import Code, Unit
from biasaudit.records.responses import Response
from biasaudit.runner.pipeline import plan_inputs
from biasaudit.spec import StimuliSpec
from biasaudit.spec.compose import Composed


def calibrate_layer(composed: Composed, plan: CodingPlan, name: str) -> dict[str, Any]:
    cfg = composed.config
    spec_file = str(composed.spec_file)
    layer = plan.layers[name]
    cal = layer.spec.calibration
    assert cal is not None
    key = f"coding.{name}.calibration"
    path = resolve_source(StimuliSpec(source=cal.source), composed.spec_file, key=f"{key}.source")
    assert path is not None
    header, rows = read_csv(path, key=f"{key}.source", limits=cfg.runtime.limits)
    if not rows:  # a header and no row: nothing to score (accuracy and kappa are undefined)
        raise DataError("the control set has no rows, only a header", file=str(path), key=f"{key}.source",
                        hint=f"add labelled responses under the header ({names_excerpt(header) or 'no columns'})")
    for col, where in [(cal.text, "text"), (cal.gold, "gold"), *[(c, f"vars.{v}") for v, c in cal.vars.items()]]:
        if col not in header:
            raise SpecError(f"control set has no column {col!r}", file=str(path), key=f"{key}.{where}",
                            hint=f"columns: {names_excerpt(header)}")
    # a filled annotation sheet (`annotate export`) is a control set: its blank labels were
    # not annotated (left out, counted) and its formula-safe cells are read as written
    unlabelled = sum(1 for r in rows if not str(r[cal.gold]).strip())
    rows = [r for r in rows if str(r[cal.gold]).strip()]
    if not rows:
        raise DataError("no row of the control set has a gold label", file=str(path), key=f"{key}.gold",
                        hint=f"fill the {cal.gold!r} column")
    if record_path(path).is_file():
        rows = [{k: unsafe_cell(v) if isinstance(v, str) else v for k, v in r.items()} for r in rows]
    gold = [cal.map.get(str(r[cal.gold]).strip(), str(r[cal.gold]).strip()) for r in rows]
    if layer.labels is not None:
        unknown = sorted(set(gold) - set(layer.labels))
        if unknown:
            raise SpecError(f"gold labels {unknown} are not labels of layer {name!r}", file=spec_file,
                            key=f"{key}.map", hint=f"map them onto {', '.join(layer.labels)}")
    units = [Unit(id=f"control|{i}", cell="control", stimulus=str(i), slot="control", variant=0, sample=0,
                  key=f"control|{i}", levels=dict(cal.levels), fields={**r, **{v: r[c] for v, c in cal.vars.items()}},
                  vars={}) for i, r in enumerate(rows)]
    responses = {u.key: Response(key=u.key, status="ok", output={"text": str(r[cal.text])})
                 for u, r in zip(units, rows, strict=True)}
    # the control responses are the input as given: no strip, no other layer's output
    chain = {name: replace(layer, input=Input("response"), spec=layer.spec.model_copy(update={"strip": None}))}
    fb = layer.spec.fallback
    while fb is not None:
        lay = plan.layers[fb]
        chain[fb] = replace(lay, input=Input("response"), spec=lay.spec.model_copy(update={"strip": None}))
        fb = lay.spec.fallback
    answerer = StoreAnswerer(cfg)
    try:
        result = run_coding(CodingPlan(layers=chain, pairs=[]), units, responses, answerer)
    finally:
        answerer.close()
    codes: Mapping[str, Code] = result.codes[name]
    labels = [codes[u.id].label if codes[u.id].coded else None for u in units]
    raters = []
    judges = list(dict.fromkeys(j for c in codes.values() for j in c.detail.rater_votes() or {}))
    for j in judges:
        raters.append(rater_score(j, [(codes[u.id].detail.rater_votes() or {}).get(j) for u in units], gold,
                                  seed=cfg.runtime.seed))
    raters.append(rater_score("panel majority" if judges else name, labels, gold, seed=cfg.runtime.seed))
    out: dict[str, Any] = {"layer": name, "control_set": str(path), "n": len(rows), "unlabelled": unlabelled,
                           "raters": raters}
    # kept with the cache: a run whose layer uses this coder reads it (coding/calibration_record.py)
    out["passed"] = record(cfg, layer, out)
    return out


def calibrate(composed: Composed, layer: str | None = None) -> list[dict[str, Any]]:
    watch_config(composed.config)
    plan = plan_inputs(composed).coding
    spec_file = str(composed.spec_file)
    named = [n for n, lay in plan.layers.items() if lay.spec.calibration is not None]
    if layer is not None:
        if layer not in plan.layers:
            raise SpecError(f"no coding layer {layer!r}", file=spec_file, key="coding",
                            hint=f"layers: {', '.join(plan.layers) or '(none)'}")
        if layer not in named:
            raise SpecError(f"layer {layer!r} has no `calibration` section", file=spec_file, key=f"coding.{layer}",
                            hint="add calibration: {source: control.csv, text: response, gold: label, map: {...}}")
        named = [layer]
    if not named:
        raise SpecError("no coding layer has a `calibration` section", file=spec_file, key="coding",
                        hint="add calibration: {source: data/control.csv, map: {S: E, CS: D, N: N, R: R}} to a layer")
    return [calibrate_layer(composed, plan, n) for n in named]


__all__ = ["calibrate", "calibrate_layer"]
