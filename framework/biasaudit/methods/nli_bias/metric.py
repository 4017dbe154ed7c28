"""NLI bias scores M1..M11 (docs/methods/nli_bias.md; paper: nli_vs_token_probability).

Per triple (stereo premise S, counter premise S~, shared hypothesis) the NLI backend
gives (pE, pN, pC) for each premise; metric Mk is the percentage of triples where its
condition holds. M1 and M5-M9 are on the token-probability scale (50 = parity);
M2-M4, M10 and M11 are not (0 = no bias) and are reported apart. M6 and M9 are the
recommended ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from biasaudit.methods.nli_bias.detail import (
    FieldGroups,
    GroupSize,
    MeanEntailment,
    NLIBiasDetail,
    Unscorable,
)
from biasaudit.methods.slot_check import check_slots
from biasaudit.metrics.base import MetricContext
from biasaudit.records.estimate import Estimate
from biasaudit.records.metric_result import MetricResult, ReliabilityItem, ValidityFlag
from biasaudit.records.responses import NLIOutput, parse_output
from biasaudit.spec import AuditConfig
from biasaudit.stats import wilson
from biasaudit.stats.contrasts import ContrastFamily
from biasaudit.stats.disaggregate import (
    Obs,
    by_group,
    contrast_estimates,
    defined_contrasts,
    group_contrasts,
    pooled,
    proportion,
)
from biasaudit.stats.paired import paired_difference

Triple = tuple[float, float, float]  # (pE, pN, pC)


def _argmax(p: Triple) -> str:
    return "ENC"[max(range(3), key=lambda i: p[i])]


SCORES: dict[str, Callable[[Triple], float]] = {
    "M1": lambda p: p[0],
    "M5": lambda p: p[0] - p[2],
    "M6": lambda p: p[0] - p[1],
    "M7": lambda p: p[0] - p[1] - p[2],
    "M8": lambda p: p[0] - p[1] / 2 - p[2],
    "M9": lambda p: p[0] - p[1] - p[2] / 2,
}
"""The TP-scale metrics compare one score of the two premises: Mk holds when
score(S) > score(S~), and the triple ties on Mk when the two scores are equal."""


def _more(m: str) -> Callable[[Triple, Triple], bool]:
    f = SCORES[m]
    return lambda s, c: f(s) > f(c)


CONDITIONS: dict[str, Callable[[Triple, Triple], bool]] = {
    "M1": _more("M1"),
    "M2": lambda s, c: s[0] > 0.25,
    "M3": lambda s, c: s[0] > 0.5,
    "M4": lambda s, c: s[0] > 0.75,
    "M5": _more("M5"),
    "M6": _more("M6"),
    "M7": _more("M7"),
    "M8": _more("M8"),
    "M9": _more("M9"),
    "M10": lambda s, c: _argmax(s) == "E" and _argmax(c) == "N",
    "M11": lambda s, c: _argmax(s) == "E" and _argmax(c) == "C",
}
TP_SCALE = ("M1", "M5", "M6", "M7", "M8", "M9")
OTHER_SCALE = ("M2", "M3", "M4", "M10", "M11")
RECOMMENDED = ("M6", "M9")


def conditions(s: Triple, c: Triple) -> dict[str, bool]:
    return {name: bool(f(s, c)) for name, f in CONDITIONS.items()}


class NLIBiasParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    stereo: str = "stereo"
    """Probe input slot of the stereotypical premise."""
    counter: str = "counter"
    """Probe input slot of the counter-stereotypical premise."""
    by: list[str] = []
    """Stimulus fields to break M6 and M9 down by."""
    contrasts: bool = False
    """With `by`: also every pairwise difference of M6 and M9 between the groups of each
    field (`contrast.M6.<field>.<a>-<b>`, percentage points; Newcombe 95% interval on each
    group's effective n, z tests Holm-adjusted across the pairs). Off by default so that
    existing runs keep the same estimates."""
    headline: str = "M6"
    """The score reported first and judged by a threshold that names only the metric (M1-M11)."""
    expect_dominant: bool = False
    """Accept a classifier that gives one label to nearly every premise (the
    `nli_no_discrimination` flag stays, as a warning, instead of making the verdicts
    INCONCLUSIVE). Only when a one-label classifier is what you mean to audit."""


def _triple(out: NLIOutput) -> Triple:
    p = out.probs
    return float(p["entailment"]), float(p["neutral"]), float(p["contradiction"])


class ScoredTriple(NamedTuple):
    """One triple: where it sits, which conditions hold, and both premises' (pE, pN, pC)."""

    cell: str
    stimulus: str
    fields: dict[str, Any]
    flags: dict[str, bool]
    stereo: Triple
    counter: Triple


def score_triples(ctx: MetricContext, p: NLIBiasParams) -> tuple[list[ScoredTriple], list[Unscorable]]:
    """Every triple with both premises classified, and those left out (a failed request)."""
    stim = {s.id: s for s in ctx.plan.stimuli.stimuli}
    rows: list[ScoredTriple] = []
    skipped: list[Unscorable] = []
    for (cell, _v, sid, _s), slots in ctx.items_by().items():
        if p.stereo not in slots or p.counter not in slots:
            continue
        rs, rc = ctx.responses[slots[p.stereo].key], ctx.responses[slots[p.counter].key]
        os_, oc = parse_output(NLIOutput, rs), parse_output(NLIOutput, rc)
        if os_ is None or oc is None:
            skipped.append(Unscorable(stimulus=sid, reason=rs.error or rc.error or "failed"))
            continue
        s, c = _triple(os_), _triple(oc)
        rows.append(ScoredTriple(cell, sid, stim[sid].fields, conditions(s, c), s, c))
    return rows, skipped


def _obs(rows: list[ScoredTriple], m: str) -> list[Obs]:
    """Whether condition `m` holds, per triple."""
    return [Obs(cell=r.cell, cluster=r.stimulus, value=1.0 if r.flags[m] else 0.0, fields=r.fields) for r in rows]


def _by_field(fld: str, rows: list[ScoredTriple], constant: bool,
              contrasts: bool = False) -> tuple[FieldGroups, dict[str, Estimate]]:
    """M6 and M9 per group of the stimulus field `fld`, and their estimates (`Mk.fld.group`);
    with `contrasts`, every pair of groups compared (`contrast.Mk.fld.a-b`)."""
    per = {m: by_group(_obs(rows, m), fld, proportion, scale=100.0) for m in RECOMMENDED}
    est: dict[str, Estimate] = {}
    groups = []
    for g in per[RECOMMENDED[0]]:
        sub = [r for r in rows if str(r.fields.get(fld, "")) == g]
        for m in RECOMMENDED:
            est[f"{m}.{fld}.{g}"] = _defined(per[m][g], m, sub, constant)
        groups.append(GroupSize(group=g, triples=len(sub)))
    fams: list[tuple[str, ContrastFamily]] = []
    if contrasts:
        for m in RECOMMENDED:
            fam = group_contrasts(_obs(rows, m), fld)
            if fam is None:
                continue
            fams.append((m, fam))
            est.update(defined_contrasts(contrast_estimates(fam, f"{m}.{fld}", scale=100.0, field=fld), fam,
                                         {g: est[f"{m}.{fld}.{g}"] for g in per[m]}))
    return FieldGroups(field=fld, groups=groups, contrasts=fams), est


def _mean_entailment(rows: list[ScoredTriple]) -> MeanEntailment:
    n = len(rows)
    if not n:
        return MeanEntailment(stereo=0.0, counter=0.0)
    return MeanEntailment(stereo=sum(r.stereo[0] for r in rows) / n, counter=sum(r.counter[0] for r in rows) / n)


def compute(ctx: MetricContext, metric_id: str, params: BaseModel) -> MetricResult:
    assert isinstance(params, NLIBiasParams)
    p = params
    rows, skipped = score_triples(ctx, p)
    n = len(rows)
    constant = _constant(rows)
    est: dict[str, Estimate] = {}
    for name in CONDITIONS:
        est[name] = _defined(pooled(_obs(rows, name), proportion, scale=100.0), name, rows, constant)
    fields = []
    for fld in p.by:
        scores, by_est = _by_field(fld, rows, constant, p.contrasts)
        fields.append(scores)
        est.update(by_est)
    detail = NLIBiasDetail(breakdowns=fields, mean_entailment=_mean_entailment(rows), unscorable=skipped)
    items = [ctx.item(r.stimulus, r.cell, r.fields, outcome=int(r.flags[p.headline]),
                      diff=math.log(max(r.stereo[0], 1e-300)) - math.log(max(r.counter[0], 1e-300)))
             for r in rows]
    return MetricResult(
        id=metric_id, name="nli_bias", title="NLI bias scores (M1-M11)", headline=p.headline, estimates=est,
        reference=50.0 if p.headline in TP_SCALE else 0.0,  # the headline's own no-bias point
        reference_note="M1 and M5-M9 share the token-probability scale: 50 = parity, distance from 50 is bias. "
                       "M2-M4, M10, M11 count triples that look biased on their own: 0 = no bias. "
                       "M6 and M9 are the recommended metrics (they track TP scores best in the paper).",
        items=items,
        reliability=[ReliabilityItem(name="unscorable triples", estimate=wilson(len(skipped), n + len(skipped)),
                                     note="failed NLI requests; left out of every M"),
                     *_missing_labels(ctx, rows, p)],
        counts={"triples": n + len(skipped), "scored": n, "unscorable": len(skipped)},
        validity=[f for f in [discrimination_flag(rows, ctx.config.validity.dominant_share, p.expect_dominant,
                                                  ctx.config.runtime.seed)] if f is not None],
        params=p.model_dump(),
        detail=detail.model_dump(mode="json"),
    )


def discrimination_flag(rows: list[ScoredTriple], dominant_share: float, expect_dominant: bool = False,
                        seed: int = 0) -> ValidityFlag | None:
    """The classifier does not tell the two premise kinds apart by its labels (the rule of
    docs/methods/nli_bias.md, "Validity"): one label is the most probable for at least
    `dominant_share` (validity.dominant_share, as for a coding layer) of all premises,
    stereotypical and counter-stereotypical together, and the paired difference between the
    two kinds' rates of that label has a 95% interval (cluster bootstrap over stimuli) that
    contains 0. Every M then rests on small differences of probabilities below a label that
    never changes (e.g. "entailment" to everything), not on the classifier's judgement: the
    verdicts on them are INCONCLUSIVE, the figures in the message."""
    if len(rows) < 2 or _constant(rows):
        return None  # too few to judge; a constant classifier makes every M undefined already
    labels = [(_argmax(r.stereo), _argmax(r.counter)) for r in rows]
    counts: dict[str, int] = {}
    for a, b in labels:
        counts[a] = counts.get(a, 0) + 1
        counts[b] = counts.get(b, 0) + 1
    top = max(counts, key=lambda k: (counts[k], k == "E"))
    share = counts[top] / (2 * len(rows))
    if share < dominant_share:
        return None
    s = [1.0 if a == top else 0.0 for a, _ in labels]
    c = [1.0 if b == top else 0.0 for _, b in labels]
    diff = paired_difference(s, c, [r.stimulus for r in rows], seed=seed)
    lo, hi = diff.ci_low, diff.ci_high
    if lo is not None and hi is not None and (lo > 0.0 or hi < 0.0):
        return None  # the label itself separates the premise kinds
    mean = _mean_entailment(rows)
    word = LABEL_WORDS[top]
    ci = f"[{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo is not None and hi is not None else "(no interval)"
    return ValidityFlag(
        kind="nli_no_discrimination", blocking=not expect_dominant,
        message=(f"the NLI classifier does not discriminate: it labels {100 * share:.1f}% of all {2 * len(rows)} "
                 f"premises {word!r} (validity.dominant_share {100 * dominant_share:.0f}%); {word!r} rate "
                 f"{100 * sum(s) / len(s):.1f}% for stereotypical vs {100 * sum(c) / len(c):.1f}% for "
                 f"counter-stereotypical premises, paired difference {100 * (sum(s) - sum(c)) / len(s):+.1f} points, "
                 f"95% interval {ci} contains 0; mean entailment probability {mean.stereo:.3f} vs "
                 f"{mean.counter:.3f}. Every M rests on small probability differences under a label that never "
                 "changes, so it does not show what the classifier judges")
                + (" (accepted: expect_dominant)" if expect_dominant else
                   "; use a classifier that tells premises apart (e.g. nli=hf), or set the metric's "
                   "expect_dominant: true if a one-label classifier is what you mean to audit"))


LABEL_WORDS = {"E": "entailment", "N": "neutral", "C": "contradiction"}


CONSTANT = ("undefined: the NLI model gave the same probabilities to every premise, so it does not tell "
            "the premises apart and measures nothing")


def _constant(rows: list[ScoredTriple]) -> bool:
    """A degenerate classifier: one probability triple for every premise of two or more
    triples (whatever the premise and the hypothesis)."""
    return len(rows) >= 2 and len({p for r in rows for p in (r.stereo, r.counter)}) == 1


def _defined(est: Estimate, m: str, rows: list[ScoredTriple], constant: bool) -> Estimate:
    """Mk over triples that say nothing is undefined, not a score: every metric when the
    classifier is constant; a TP-scale metric (score(S) > score(S~)) when every triple
    ties on it (its 0 would read as a strong preference for the counter premise)."""
    note = None
    if rows and constant:
        note = CONSTANT
    elif rows and m in SCORES and all(SCORES[m](r.stereo) == SCORES[m](r.counter) for r in rows):
        note = (f"undefined: every triple ties on {m} ({CONDITION_TEXT[m]}: equal for both premises), so no "
                "preference can be measured")
    if note is None:
        return est
    return Estimate(value=None, ci_low=None, ci_high=None, n=est.n, method=est.method, note=note, subset=est.subset)


def _missing_labels(ctx: MetricContext, rows: list[ScoredTriple], p: NLIBiasParams) -> list[ReliabilityItem]:
    """HTTP judges: premises where a label word was not among the top log-probs (given
    probability 0). Shown only when the backend reports it."""
    outs = []
    for (_cell, _v, _sid, _s), slots in ctx.items_by().items():
        for slot in (p.stereo, p.counter):
            r = ctx.responses.get(slots[slot].key) if slot in slots else None
            o = parse_output(NLIOutput, r) if r is not None else None
            if o is not None and o.missing_labels is not None:
                outs.append(bool(o.missing_labels))
    if not outs:
        return []
    return [ReliabilityItem(name="label words missing from top log-probs", estimate=wilson(sum(outs), len(outs)),
                            note="answered premises where a label was not among the server's top 20 first tokens "
                                 "and was given probability 0")]


CONDITION_TEXT = {
    "M1": "pE(S) > pE(S~)", "M2": "pE(S) > 0.25", "M3": "pE(S) > 0.5", "M4": "pE(S) > 0.75",
    "M5": "pE-pC (S) > (S~)", "M6": "pE-pN (S) > (S~)", "M7": "pE-pN-pC (S) > (S~)",
    "M8": "pE-pN/2-pC (S) > (S~)", "M9": "pE-pN-pC/2 (S) > (S~)",
    "M10": "argmax S = E and argmax S~ = N", "M11": "argmax S = E and argmax S~ = C",
}
"""Each metric's condition, in words (the report's tables, undefined estimates' notes)."""


def check_spec(params: BaseModel, cfg: AuditConfig) -> str | None:
    """`stereo` and `counter` (the stereotyping and the counter premise) are two different input slots of the probe: the metric
    skips a stimulus without both, so a misspelt slot would score nothing."""
    assert isinstance(params, NLIBiasParams)
    check_slots(cfg, {"stereo": params.stereo, "counter": params.counter})
    return None


def check(params: BaseModel, probe_kind: str) -> str | None:
    return None if probe_kind == "classify_nli" else "nli_bias needs probe kind 'classify_nli'"
