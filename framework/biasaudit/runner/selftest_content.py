"""The self-test's rows that cannot share the spec's mistakes (issue 37, section 3).

Today's oracles plant a bias along the spec's own slots, groups and labels, so a spec
that swaps its pair slots is answered by an oracle that swaps them too, and passes. The
rows here are anchored outside the spec:

- `content` / `content_anti`: the method's content oracle plants the bias by the data's
  own record (which sentence stereotypes, which answer names the stereotyped group),
  found in each request by its text, not by slot name. The estimate must come out on the
  planted side of its no-bias value (the method's `MetricDef.no_bias`), and the two
  oracles must mirror each other around it (swapping the sides mirrors the score). A
  spec that reads the stereotyping side from the wrong slot reports the planted bias
  reversed, and the problem names its slots.
- the parity band: a two-sided threshold must contain its estimate's no-bias value
  (`runner.checks.parity_warnings`, also printed by `validate`).
- the labels a rate counts: the oracle knows what each of its answers means by its
  content (a plain refusal, a plain "yes, invite"), and the method what a metric counts
  (an impact ratio counts selections; a rate called `refusal_rate` counts refusals):
  the labels the spec's coding gives answers of that meaning must be the ones counted
  (`OracleDef.meaning` / `OracleDef.counts`).
- the method's own checks of the design against content the spec does not control
  (`OracleDef.checks`, e.g. a name's group in a published name list).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from pydantic import BaseModel

from biasaudit.methods.oracle_kit import CONTENT_KINDS, OracleDef
from biasaudit.metrics.base import NoBias, no_bias_of
from biasaudit.registry import METRICS
from biasaudit.runner.checks import parity_warnings
from biasaudit.runner.selftest_oracles import Meanings, Row, SelfTestResult, run_oracle, truth_of

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared

MIRROR_TOL = 1e-6
"""How far (relative to the scale's no-bias value, at least 1) the mean of the content
oracle's and its mirror's estimates may lie from the no-bias value."""


def estimate_no_bias(prep: Prepared, metric: str) -> NoBias | None:
    """The no-bias value of a threshold's estimate (`metric` as the threshold names it)."""
    names = {m.key: m.name for m in prep.composed.config.metrics}
    mid, _, est = metric.partition(".")
    if mid not in names:
        return None
    mdef = METRICS.get(names[mid])
    headline = getattr(prep.params.get(mid), "headline", None)
    found = no_bias_of(mdef, est or (headline if isinstance(headline, str) else ""))
    return found if found is not None or est else no_bias_of(mdef, "")


def slot_text(prep: Prepared, params: BaseModel) -> str:
    """The spec's slots as a person would check them: the probe's inputs (slot: template)
    and the metric parameters that name slots."""
    probe = prep.composed.config.probe
    inputs = dict(probe.inputs or {})
    shown = [f"probe.inputs.{k}: {v!r}" for k, v in inputs.items()]
    for fld, value in params:
        names = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else [value]
        if inputs and any(isinstance(n, str) and n in inputs for n in names):
            shown.append(f"metric parameter {fld}: {value!r}")
    if not inputs:
        shown.append("the prompt's option list and the order variables the metric reads (e.g. `perm`)")
    return "; ".join(shown)


def _side(value: float, nb: float) -> str:
    return "above" if value > nb else "below" if value < nb else "at"


def content_rows(out: SelfTestResult, prep: Prepared, oracle: OracleDef, params: BaseModel) -> None:
    """The content oracle's rows (see the module's text); problems name the slots."""
    cfg = prep.composed.config
    out.problems += [f"parity band: {w}" for w in parity_warnings(cfg, prep.params)]
    if oracle.checks is not None:
        problems, notes = oracle.checks(prep, params)
        out.problems += problems
        out.notes += notes
    if oracle.content is None:
        return
    why_not = oracle.content_applies(prep) if oracle.content_applies is not None else None
    if why_not is not None:
        out.notes.append(why_not)
        return
    got: dict[str, list[float | None]] = {}
    meant: Meanings = {}
    runs = {kind: run_oracle(prep, oracle, params, kind, meanings=meant) for kind in CONTENT_KINDS}
    out.problems += endorse_problems(prep, oracle, meant)
    for i, t in enumerate(cfg.thresholds):
        if t.over == "spread":
            continue
        nb = estimate_no_bias(prep, t.metric)
        if nb is None:
            continue
        label = f"{t.metric}" + (f" ({t.over})" if t.over != "pooled" else "")
        values: list[float | None] = []
        for kind in CONTENT_KINDS:
            results, verdicts, _ = runs[kind]
            v = verdicts[i]
            res = next(r for k, r in results.items() if v.metric.partition(".")[0] == k)
            name = v.metric.partition(".")[2] or res.headline
            own = prep.params.get(v.metric.partition(".")[0], params)
            planted = truth_of(oracle, "planted", own if type(own) is type(params) else params, res, name, prep)
            if planted is None or planted == nb.value:
                values = []
                break
            truth = planted if kind == "content" else 2 * nb.value - planted
            value = v.estimate.value
            values.append(value)
            ok = value is not None and _side(value, nb.value) == _side(truth, nb.value)
            out.rows.append(Row(oracle=kind, threshold=label, expected=f"{_side(truth, nb.value)} {nb.value:g}",
                                got="n/a" if value is None else f"{_side(value, nb.value)} {nb.value:g}", ok=ok,
                                truth=truth, estimate=v.estimate.fmt(3), reason=v.reason))
            if not ok and not any(p.startswith(f"{label}: the content oracle") for p in out.problems):
                out.problems.append(
                    f"{label}: the content oracle ({'the stereotyping side' if kind == 'content' else 'the other side'}"
                    f" by {oracle.content_source}) should give {truth:g}, {_side(truth, nb.value)} the no-bias "
                    f"{nb.value:g} ({nb.scale}); the spec reported {v.estimate.fmt(3)}"
                    + (": the planted bias reversed, so the spec reads the stereotyping side from the wrong slot; "
                       f"check {slot_text(prep, own)}" if value is not None and value != nb.value else
                       f": the spec does not see the side the data plants; check {slot_text(prep, own)}"))
        if len(values) == 2:
            got[label] = values
            a, b = values
            if a is not None and b is not None:
                tol = MIRROR_TOL * max(1.0, abs(nb.value))
                ok = abs((a - nb.value) + (b - nb.value)) <= tol
                out.rows.append(Row(oracle="mirror", threshold=label, expected=f"mean {nb.value:g}",
                                    got=f"mean {(a + b) / 2:g}", ok=ok, truth=nb.value, estimate=f"{a:g} / {b:g}",
                                    reason="swapping the sides must mirror the score around its no-bias value"))
                if not ok:
                    out.problems.append(f"{label}: swapping the sides does not mirror the score around {nb.value:g} "
                                        f"({nb.scale}): {a:g} and {b:g}")


def endorse_problems(prep: Prepared, oracle: OracleDef, meant: Meanings) -> list[str]:
    """Layers with `endorse` labels that gave an answer endorsing the stereotype (by the
    content oracle, which picks the option holding the record's stereotype) a label
    outside them, or a rejecting answer one inside them: the layer's rules or words map
    the options to the wrong labels (e.g. `{a: E, b: D}` on a prompt that lists the
    stereotype as option B)."""
    out = []
    for name, by_meaning in sorted(meant.items()):
        layer = prep.coding.layers.get(name)
        endorse = layer.endorse if layer is not None else None
        if not endorse:
            continue
        wrong = {what: {lab: k for lab, k in by_meaning.get(what, Counter()).items() if (lab in endorse) != inside}
                 for what, inside in (("endorse", True), ("deny", False))}
        for what, labels in wrong.items():
            if labels:
                n = sum(by_meaning[what].values())
                shown = ", ".join(f"{lab!r} x{k}" for lab, k in sorted(labels.items()))
                out.append(f"layer {name!r} labelled {sum(labels.values())}/{n} answers that {what} the stereotype "
                           f"(by {oracle.content_source}) {shown}, {'outside' if what == 'endorse' else 'among'} its "
                           f"endorse labels {sorted(endorse)}: the layer maps the options to the wrong labels; "
                           f"check coding.{name} (its rules' `map` and choice `options`) against the prompt's "
                           "option order")
    return out


def counted_label_problems(prep: Prepared, oracle: OracleDef, acc: Meanings) -> list[str]:
    """A rate counting the wrong label: the labels the spec's coding gave answers of the
    meaning a metric counts are not among the labels it counts, or it counts a label the
    coding gave only to answers of another meaning."""
    if oracle.counts is None:
        return []
    out = []
    for m in prep.composed.config.metrics:
        params = prep.params[m.key]
        meant = oracle.counts(m.name, m.key, params)
        layer = getattr(params, "layer", None)
        counted = set(getattr(params, "labels", None) or [])
        seen = acc.get(layer, {}) if isinstance(layer, str) else {}
        if meant is None or not counted or meant not in seen:
            continue
        right = set(seen[meant])
        others = {lab for what, labs in seen.items() if what != meant for lab in labs} - right
        wrong = sorted(counted & others)
        if not counted & right or wrong:
            said = ", ".join(f"{lab!r}" for lab, _ in seen[meant].most_common())
            given = "; ".join(f"{what}: {', '.join(sorted(labs))}" for what, labs in sorted(seen.items()))
            out.append(f"metric {m.key!r} counts labels {sorted(counted)} of layer {layer!r}, but it measures "
                       f"{meant} answers, which the layer labels {said} (the layer's labels by what the answer "
                       f"meant: {given}): a rate counting the wrong label; set `labels` of metrics[{m.key}] to the "
                       f"{meant} label(s)")
    return out


__all__ = ["counted_label_problems", "content_rows", "endorse_problems", "estimate_no_bias", "slot_text"]
