"""Human labels as gold: how far a machine layer (and each of its judges) agrees with
people, and the label rates corrected by the humans' sample.

For a reliability pair with one `human` layer (coders/human.py), on the units both coded
(each layer's `map` applied): per rater (the machine layer, and each judge of a panel
from its votes) the accuracy against the human labels (the pooled proportion with its
clustered interval, as every share in the report), Cohen's kappa with its cluster-
bootstrap interval (stimuli resampled, as the pair's own kappa) and the confusion matrix
(rows: the human label, columns: the rater's).

Label rates: for each label of the shared space (one against the rest), the judge-only
rate over every unit the machine layer coded, the humans-only rate over the sample (a
Wilson interval), and the prediction-powered estimate (stats/ppi.py: PPI++, the judge on
the unlabelled units corrected by its error on the labelled ones, its weight tuned to the
data; the sample's strata weighted by their share of the units). Where PPI cannot help (too
few human labels of a kind, a judge that does not track the humans), that estimate is the
humans-only interval with a note saying why. PPI needs the sample to be drawn from the units this layer coded: when the
sheet sampled another layer's units it is reported as undefined, with the reason. Units
sampled but left blank count as unlabelled (assumed missing at random; the note says how
many).

A sheet whose units a reviewer chose in the viewer (`selection: chosen`, a convenience
sample: the answers that caught the reviewer's eye) gives the agreement block (accuracy,
kappa, confusion on the units it labels, the report saying how they were chosen), but
no humans-only rate and no PPI estimate: both read the sample as a random draw of the
units, which it is not, so they are undefined with that reason.

When the PPI estimate is undefined because the judge's error on a label is the same on
every human-labelled unit (its variance is 0), the note says which way: the judge agrees
with every human label, disagrees with every one, or errs by the same amount for another
reason (`constant_error`). A machine layer whose accuracy against the human labels is
below chance (always giving the most common human label) puts a validity flag on the
verdicts it feeds (`below_chance_flags`): blocking when the whole accuracy interval is
below chance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from biasaudit.coding.human_sheet import SheetEvidence
from biasaudit.coding.layers import CodingPlan, Layer, ReliabilityPair
from biasaudit.coding.reliability import kappa_alpha
from biasaudit.records.codes import Code, Unit
from biasaudit.records.coding import GoldReport, LabelRate, RaterGold
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import ValidityFlag
from biasaudit.stats.disaggregate import Obs, pooled, proportion
from biasaudit.stats.ppi import PPI, ppi_mean, stratified_mean


def _rater(name: str, rows: Sequence[tuple[Unit, str, str]], labels: list[str], seed: int) -> RaterGold:
    human = [h for _, h, _ in rows]
    got = [r for _, _, r in rows]
    acc = pooled([Obs(cell=u.cell, cluster=u.stimulus, value=1.0 if h == r else 0.0) for u, h, r in rows],
                 proportion, seed=seed) if rows else Estimate.no_data("wilson")
    kappa, _ = kappa_alpha(human, got, [u.stimulus for u, _, _ in rows], seed)
    order = list(dict.fromkeys([*labels, *sorted(set(human) | set(got))]))
    from sklearn.metrics import (
        confusion_matrix,  # here: sklearn costs a second to import, and validate never needs it
    )

    conf = confusion_matrix(human, got, labels=order).tolist() if rows else []
    chance = max(human.count(x) for x in set(human)) / len(human) if human else None
    return RaterGold(rater=name, n=len(rows), accuracy=acc, chance=chance, kappa=kappa, labels=order,
                     confusion=[[int(x) for x in r] for r in conf])


CHOSEN = ("the sheet's units were chosen by a reviewer in the viewer, not drawn at random (a convenience sample), "
          "so they say nothing of the rate over all units; label a random sample (`biasaudit annotate export`) for "
          "this estimate")


def _rates(labels: list[str], units: Sequence[Unit], machine: Mapping[str, str], human: Mapping[str, str],
           strata: Mapping[str, str], blank: int, ppi_ok: str | None, seed: int,
           chosen: bool = False) -> list[LabelRate]:
    pop = [u for u in units if u.id in machine]
    lab = [u.id in human for u in pop]
    st = [strata.get(u.id, "?") for u in pop]
    out = []
    for label in labels:
        f = [1.0 if machine[u.id] == label else 0.0 for u in pop]
        y = [1.0 if human.get(u.id) == label else 0.0 for u in pop]
        judge = pooled([Obs(cell=u.cell, cluster=u.stimulus, value=v) for u, v in zip(pop, f, strict=True)],
                       proportion, seed=seed) if pop else Estimate.no_data("wilson")
        if ppi_ok is not None:
            est = Estimate.no_data(PPI, f"undefined: {ppi_ok}")
        else:
            est = ppi_mean(f, lab, y, st, bounds=(0.0, 1.0))
            why = None if est.has_data else constant_error(label, f, lab, y, st)
            if why is not None:
                est = est.model_copy(update={"note": f"undefined: {why}"})
            if est.has_data and blank:
                est = est.model_copy(update={"note": est.note + f"; {blank} sampled unit(s) left blank count as "
                                                                 "unlabelled (assumed missing at random)"})
        hum = (Estimate.no_data("wilson-stratified", f"undefined: {CHOSEN}") if chosen
               else stratified_mean(lab, y, st, bounds=(0.0, 1.0)))
        out.append(LabelRate(label=label, judge=judge, human=hum, ppi=est))
    return out


def constant_error(label: str, f: Sequence[float], labelled: Sequence[bool], y: Sequence[float],
                   strata: Sequence[str]) -> str | None:
    """Why the judge's error on `label` has no variance, in words, or None when it varies
    in some stratum (PPI's zero variance then has another cause, and its own note stays).
    The error is judge minus human (1: the judge gives the label, the human does not) on
    the human-labelled units, per sampling stratum (each needs two or more)."""
    per: dict[str, set[float]] = {}
    for fi, li, yi, si in zip(f, labelled, y, strata, strict=True):
        if li:
            per.setdefault(si, set()).add(fi - yi)
    n = sum(1 for x in labelled if x)
    if not per or any(len(v) != 1 for v in per.values()):
        return None
    errors = {next(iter(v)) for v in per.values()}
    tail = ("so the correction's variance estimate is 0: the sample cannot show how the judge's errors vary, and an "
            "interval would ignore them; label more units")
    if errors == {0.0}:
        return (f"the judge agrees with every one of the {n} human labels on {label!r} (it gives {label!r} exactly "
                f"where the humans do), {tail}")
    if errors == {1.0}:
        return (f"the judge disagrees with every one of the {n} human labels on {label!r}: it gives {label!r} to all "
                f"{n} labelled units and the humans to none; its error is the same on every unit, {tail}")
    if errors == {-1.0}:
        return (f"the judge disagrees with every one of the {n} human labels on {label!r}: the humans give {label!r} "
                f"to all {n} labelled units and the judge to none; its error is the same on every unit, {tail}")
    return (f"the judge's error on {label!r} is the same on every human-labelled unit of each sampling stratum "
            f"({n} units; it agrees in some strata and disagrees in all units of others), {tail}")


def _pairing(pair: ReliabilityPair, layers: Mapping[str, Layer], codes: Mapping[str, Mapping[str, Code]]
             ) -> tuple[str, str, dict[str, str], dict[str, str]] | None:
    """(human layer, machine layer, unit -> human label, unit -> machine label), each
    layer's `map` applied; None unless the pair has exactly one human layer."""
    humans = [n for n in (pair.a, pair.b) if layers[n].coder_def.is_human]
    if len(humans) != 1:
        return None
    h = humans[0]
    m = pair.b if h == pair.a else pair.a
    map_h, map_m = (pair.map_a, pair.map_b) if h == pair.a else (pair.map_b, pair.map_a)
    human = {u: map_h.get(c.label, c.label) for u, c in codes.get(h, {}).items() if c.coded and c.label is not None}
    machine = {u: map_m.get(c.label, c.label) for u, c in codes.get(m, {}).items() if c.coded and c.label is not None}
    return h, m, human, machine


def below_chance_flags(plan: CodingPlan, units: Sequence[Unit], codes: Mapping[str, Mapping[str, Code]]
                       ) -> dict[str, ValidityFlag]:
    """Machine layer -> a flag when its accuracy against the human labels is below chance
    (the accuracy of always giving the most common human label): a warning when only the
    point estimate is below it, blocking when the whole 95% accuracy interval is (the judge
    is worse than chance on these labels, so the verdicts it feeds mean nothing)."""
    out: dict[str, ValidityFlag] = {}
    by_id = {u.id: u for u in units}
    for p in plan.pairs:
        got = _pairing(p, plan.layers, codes)
        if got is None:
            continue
        h, m, human, machine = got
        rows = [(by_id[u], human[u], machine[u]) for u in human if u in machine and u in by_id]
        if len(rows) < 2:
            continue
        acc = pooled([Obs(cell=u.cell, cluster=u.stimulus, value=1.0 if a == b else 0.0) for u, a, b in rows],
                     proportion)
        labels = [a for _, a, _ in rows]
        top = max(set(labels), key=lambda x: (labels.count(x), x))
        chance = labels.count(top) / len(labels)
        if acc.value is None or acc.value >= chance:
            continue
        sure = acc.ci_high is not None and acc.ci_high < chance
        out[m] = ValidityFlag(
            kind="judge_below_chance", layer=m, blocking=sure,
            message=(f"this judge is worse than chance on your labels: layer {m!r} agrees with {h!r} on "
                     f"{acc.value:.2f} of {len(rows)} human-labelled units ({acc.fmt(2)}), while always answering "
                     f"the most common human label {top!r} would agree on {chance:.2f}")
                    + ("; the verdicts it feeds cannot be decided: check the judge (its rubric, its labels' map) "
                       "against the human labels" if sure else
                       " (the interval still reaches chance: label more units to tell)"))
    return out


def gold_report(pair: ReliabilityPair, layers: Mapping[str, Layer], units: Sequence[Unit],
                codes: Mapping[str, Mapping[str, Code]], seed: int = 0) -> GoldReport | None:
    """The gold report of a pair with exactly one human layer (None otherwise)."""
    got = _pairing(pair, layers, codes)
    if got is None:
        return None
    h, m, human, machine = got
    map_h, map_m = (pair.map_a, pair.map_b) if h == pair.a else (pair.map_b, pair.map_a)
    hc, mc = codes.get(h, {}), codes.get(m, {})
    # the sheet's sampling design, from the human layer's evidence (a code without it: a failed response)
    ev = {u: c.detail for u, c in hc.items() if isinstance(c.detail, SheetEvidence)}
    stratum_of = {u: d.stratum for u, d in ev.items() if d.stratum is not None}
    strata = {u: stratum_of.get(u, "?") for u in hc}
    sampled_ids = [u for u, d in ev.items() if d.sampled]
    sampled = [hc[u] for u in sampled_ids]
    blank = sum(1 for c in sampled if not c.coded)
    sampled_from = next((d.sampled_from for d in ev.values() if d.sampled_from is not None), None)
    labels = list(dict.fromkeys([*(map_h.get(x, x) for x in layers[h].labels or []), *sorted(set(machine.values()))]))
    by_id = {u.id: u for u in units}
    rows = [(by_id[u], human[u], machine[u]) for u in human if u in machine and u in by_id]
    raters = [_rater(m, rows, labels, seed)]
    judges = list(dict.fromkeys(j for c in mc.values() for j in c.detail.rater_votes() or {}))
    for j in judges:
        votes = [(by_id[u], human[u], (mc[u].detail.rater_votes() or {}).get(j)) for u in human
                 if u in mc and u in by_id]
        raters.append(_rater(f"{m}: {j}", [(u, x, map_m.get(v, v)) for u, x, v in votes if v is not None],
                             labels, seed))
    ppi_ok = None
    chosen = any(ev[u].chosen for u in sampled_ids)
    if chosen:
        ppi_ok = CHOSEN
    elif sampled_from is not None and sampled_from != m:
        ppi_ok = (f"the sheet sampled the units layer {sampled_from!r} coded; a PPI estimate of {m!r} needs a sample "
                  f"of {m!r}'s units (export with --layer {m})")
    return GoldReport(human=h, layer=m, labels=labels, sampled_layer=sampled_from,
                      stratify=next((d.stratify for d in ev.values() if d.has("stratify")), None),
                      selection="chosen" if chosen else "random",
                      population=len(machine), sampled=len(sampled), annotated=len(human), blank=blank,
                      raters=raters, rates=_rates(labels, units, machine, human, strata, blank, ppi_ok, seed, chosen))


def gold_reports(plan: CodingPlan, units: Sequence[Unit], codes: Mapping[str, Mapping[str, Code]], seed: int = 0
                 ) -> list[GoldReport]:
    out = []
    for p in plan.pairs:
        rep = gold_report(p, plan.layers, units, codes, seed)
        if rep is not None:
            out.append(rep)
    return out


__all__ = ["GoldReport", "LabelRate", "RaterGold", "below_chance_flags", "constant_error", "gold_report",
           "gold_reports"]
