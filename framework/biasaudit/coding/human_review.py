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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sklearn.metrics import confusion_matrix

from biasaudit.coding.layers import CodingPlan, Layer, ReliabilityPair
from biasaudit.coding.reliability import kappa_alpha
from biasaudit.records.codes import Code, Unit
from biasaudit.records.coding import GoldReport, LabelRate, RaterGold
from biasaudit.records.estimate import Estimate
from biasaudit.stats.disaggregate import Obs, pooled, proportion
from biasaudit.stats.ppi import PPI, ppi_mean, stratified_mean


def _rater(name: str, rows: Sequence[tuple[Unit, str, str]], labels: list[str], seed: int) -> RaterGold:
    human = [h for _, h, _ in rows]
    got = [r for _, _, r in rows]
    acc = pooled([Obs(cell=u.cell, cluster=u.stimulus, value=1.0 if h == r else 0.0) for u, h, r in rows],
                 proportion, seed=seed) if rows else Estimate.no_data("wilson")
    kappa, _ = kappa_alpha(human, got, [u.stimulus for u, _, _ in rows], seed)
    order = list(dict.fromkeys([*labels, *sorted(set(human) | set(got))]))
    conf = confusion_matrix(human, got, labels=order).tolist() if rows else []
    chance = max(human.count(x) for x in set(human)) / len(human) if human else None
    return RaterGold(rater=name, n=len(rows), accuracy=acc, chance=chance, kappa=kappa, labels=order,
                     confusion=[[int(x) for x in r] for r in conf])


def _rates(labels: list[str], units: Sequence[Unit], machine: Mapping[str, str], human: Mapping[str, str],
           strata: Mapping[str, str], blank: int, ppi_ok: str | None, seed: int) -> list[LabelRate]:
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
            if est.has_data and blank:
                est = est.model_copy(update={"note": est.note + f"; {blank} sampled unit(s) left blank count as "
                                                                 "unlabelled (assumed missing at random)"})
        out.append(LabelRate(label=label, judge=judge, human=stratified_mean(lab, y, st, bounds=(0.0, 1.0)), ppi=est))
    return out


def gold_report(pair: ReliabilityPair, layers: Mapping[str, Layer], units: Sequence[Unit],
                codes: Mapping[str, Mapping[str, Code]], seed: int = 0) -> GoldReport | None:
    """The gold report of a pair with exactly one human layer (None otherwise)."""
    humans = [n for n in (pair.a, pair.b) if layers[n].coder_name == "human"]
    if len(humans) != 1:
        return None
    h = humans[0]
    m = pair.b if h == pair.a else pair.a
    map_h, map_m = (pair.map_a, pair.map_b) if h == pair.a else (pair.map_b, pair.map_a)
    hc, mc = codes.get(h, {}), codes.get(m, {})
    human = {u: map_h.get(c.label, c.label) for u, c in hc.items() if c.coded and c.label is not None}
    machine = {u: map_m.get(c.label, c.label) for u, c in mc.items() if c.coded and c.label is not None}
    strata = {u: c.detail.stratum if c.detail.stratum is not None else "?" for u, c in hc.items()}
    sampled = [c for c in hc.values() if c.detail.sampled]
    blank = sum(1 for c in sampled if not c.coded)
    sampled_from = next((c.detail.sampled_from for c in hc.values() if c.detail.sampled_from is not None), None)
    labels = list(dict.fromkeys([*(map_h.get(x, x) for x in layers[h].labels or []), *sorted(set(machine.values()))]))
    by_id = {u.id: u for u in units}
    rows = [(by_id[u], human[u], machine[u]) for u in human if u in machine and u in by_id]
    raters = [_rater(m, rows, labels, seed)]
    judges = list(dict.fromkeys(j for c in mc.values() for j in c.detail.votes or {}))
    for j in judges:
        votes = [(by_id[u], human[u], (mc[u].detail.votes or {}).get(j)) for u in human if u in mc and u in by_id]
        raters.append(_rater(f"{m}: {j}", [(u, x, map_m.get(v, v)) for u, x, v in votes if v is not None],
                             labels, seed))
    ppi_ok = None
    if sampled_from is not None and sampled_from != m:
        ppi_ok = (f"the sheet sampled the units layer {sampled_from!r} coded; a PPI estimate of {m!r} needs a sample "
                  f"of {m!r}'s units (export with --layer {m})")
    return GoldReport(human=h, layer=m, labels=labels, sampled_layer=sampled_from,
                      stratify=next((c.detail.stratify for c in hc.values() if c.detail.has("stratify")), None),
                      population=len(machine), sampled=len(sampled), annotated=len(human), blank=blank,
                      raters=raters, rates=_rates(labels, units, machine, human, strata, blank, ppi_ok, seed))


def gold_reports(plan: CodingPlan, units: Sequence[Unit], codes: Mapping[str, Mapping[str, Code]], seed: int = 0
                 ) -> list[GoldReport]:
    out = []
    for p in plan.pairs:
        rep = gold_report(p, plan.layers, units, codes, seed)
        if rep is not None:
            out.append(rep)
    return out


__all__ = ["GoldReport", "LabelRate", "RaterGold", "gold_report", "gold_reports"]
