"""Pivotal-token perplexity (docs/methods/pivotal_perplexity.md; paper: pivotal_token_perplexity).

Each stimulus is a minimal pair (a, b) embedded in frames with two clauses; the
correct prompt puts a in clause a's slot and b in clause b's, the incorrect prompt
swaps them. Prompts come from `frame_prompt`, so the segments of both are known:
token k of a segment in one prompt is aligned with token k of the same segment in the
other (difflib inside a segment when tokenization differs there). With
ppl_i = 1 / p(x_i | x_<i) and d_i = ppl_i(incorrect) - ppl_i(correct):
plain(P) = sum_P |d_i| / sum |d_i|; normalized(P) = mean_P(d_i / total) - median(d_i / total).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict

from biasaudit.data import Stimulus
from biasaudit.methods.pivotal_perplexity.detail import (
    FieldDetail,
    GroupDetail,
    PivotalDetail,
    Unscorable,
)
from biasaudit.methods.pivotal_perplexity.segments import Segment, frame_segments
from biasaudit.methods.slot_check import check_slots
from biasaudit.metrics.base import MetricContext
from biasaudit.plan import Cell
from biasaudit.records.estimate import Estimate, Spread
from biasaudit.records.json import JSONObject
from biasaudit.records.metric_result import MetricResult, ReliabilityItem
from biasaudit.records.responses import ScoredTokens, parse_output
from biasaudit.spec import AuditConfig
from biasaudit.stats import cell_spread, wilson
from biasaudit.stats.disaggregate import (
    Obs,
    by_group,
    contrast_estimates,
    defined_contrasts,
    group_contrasts,
    pooled,
    proportion,
    split,
)
from biasaudit.stats.means import CLUSTER_T, mean_t_clustered

CLASSES = ("pivotal", "period", "other")
"""The token classes (of the aligned tokens), in report order."""
_WORD = re.compile(r"\S+")


class PivotalParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    a: str = "a"
    """Stimulus field of the sentence that belongs in clause a."""
    b: str = "b"
    """Stimulus field of the sentence that belongs in clause b."""
    correct: str = "correct"
    """Probe input slot of the correct prompt."""
    incorrect: str = "incorrect"
    """Probe input slot of the incorrect prompt (the two sentences swapped)."""
    clause_a: str = "clause_a"
    """Level variable holding clause a (with the `{s}` slot)."""
    clause_b: str = "clause_b"
    """Level variable holding clause b (with the `{s}` slot)."""
    order: str = "order"
    """Level variable giving the clause order, `ab` or `ba`."""
    by: list[str] = []
    """Stimulus fields to break results down by (e.g. `category`)."""
    contrasts: bool = False
    """With `by`: also every pairwise difference of accuracy between the groups of each
    field (`contrast.accuracy.<field>.<a>-<b>`; Newcombe 95% interval on each group's
    effective n, z tests Holm-adjusted across the pairs). Off by default so that existing
    runs keep the same estimates."""
    n_resamples: int = 5000
    """Unused, kept so existing specs stay valid: the pooled normalized perplexity's interval
    is the cluster-robust t over stimuli (it was a cluster bootstrap with this many resamples)."""
    seed: int = 0
    """Unused, kept so existing specs stay valid (the seed of that bootstrap)."""


# -- pure helpers (unit-tested on the paper's Appendix A example) -----------------------

def proportions(d: np.ndarray, member: np.ndarray) -> tuple[float | None, float | None]:
    """(plain, normalized) proportion of the PPL difference explained by the tokens
    flagged in `member`; None when undefined (no such token, or no difference)."""
    total = float(np.sum(np.abs(d)))
    if total == 0 or not member.any():
        return None, None
    share = d / total
    plain = float(np.sum(np.abs(d[member])) / total)
    normalized = float(np.mean(share[member]) - np.median(share))
    return plain, normalized


def word_diff_spans(x: str, y: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character spans of the words that differ between two sentences (word-level diff)."""
    wx = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(x)]
    wy = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(y)]
    sm = difflib.SequenceMatcher(None, [w[2] for w in wx], [w[2] for w in wy], autojunk=False)
    sx: list[tuple[int, int]] = []
    sy: list[tuple[int, int]] = []
    for op, a0, a1, b0, b1 in sm.get_opcodes():
        if op != "equal":
            sx += [(w[0], w[1]) for w in wx[a0:a1]]
            sy += [(w[0], w[1]) for w in wy[b0:b1]]
    return sx, sy


def listed_spans(sentence: str, words: list[str]) -> list[tuple[int, int]]:
    spans = []
    for w in words:
        m = re.search(r"(?<!\w)" + re.escape(w) + r"(?!\w)", sentence)
        if m:
            spans.append((m.start(), m.end()))
    return spans


def is_period(text: str) -> bool:
    t = text.strip()
    return "." in t and not any(ch.isalnum() for ch in t)


@dataclass
class TokenInfo:
    index: int
    segment: str
    text: str
    start: int
    end: int
    straddles: bool


def assign_tokens(prompt: str, offsets: list[list[int]], segs: list[Segment]) -> list[TokenInfo]:
    """Map each token (BOS excluded) to the segment holding its first non-space character."""
    out = []
    for i, (s, e) in enumerate(offsets):
        if i == 0 or e <= s:
            continue
        text = prompt[s:e]
        anchor = s + (len(text) - len(text.lstrip())) if text.strip() else s
        seg = next((g for g in segs if g.start <= anchor < g.end), segs[-1])
        out.append(TokenInfo(index=i, segment=seg.id, text=text, start=s, end=e,
                             straddles=s < seg.start or e > seg.end))
    return out


def align(tok_c: list[TokenInfo], tok_i: list[TokenInfo]) -> tuple[list[tuple[TokenInfo, TokenInfo]], int]:
    """Aligned token pairs, segment by segment, and the number of unaligned tokens."""
    pairs: list[tuple[TokenInfo, TokenInfo]] = []
    unaligned = 0
    seg_ids = list(dict.fromkeys([t.segment for t in tok_c] + [t.segment for t in tok_i]))
    for sid in seg_ids:
        c = [t for t in tok_c if t.segment == sid]
        i = [t for t in tok_i if t.segment == sid]
        clean = not any(t.straddles for t in c + i)
        if clean and [t.text for t in c] == [t.text for t in i]:
            pairs += list(zip(c, i, strict=True))
            continue
        sm = difflib.SequenceMatcher(None, [t.text for t in c], [t.text for t in i], autojunk=False)
        matched = 0
        for op, a0, a1, b0, b1 in sm.get_opcodes():
            if op == "equal":
                pairs += list(zip(c[a0:a1], i[b0:b1], strict=True))
                matched += a1 - a0
        unaligned += (len(c) - matched) + (len(i) - matched)
    return pairs, unaligned


@dataclass
class PairResult:
    stimulus: str
    cell: str
    fields: dict[str, Any]
    accurate: bool
    plain: dict[str, float | None] = field(default_factory=dict)
    normalized: dict[str, float | None] = field(default_factory=dict)
    unaligned: int = 0
    aligned: int = 0
    tied: bool = False
    """Both prompts have the same sequence perplexity: no preference (not accurate)."""


def seq_ppl(logprobs: list[float | None]) -> float:
    lps = [lp for lp in logprobs[1:] if lp is not None]
    return math.exp(-sum(lps) / len(lps))


def analyse_pair(
    out_c: ScoredTokens | JSONObject, out_i: ScoredTokens | JSONObject, text_c: str, text_i: str,
    segs_c: list[Segment], segs_i: list[Segment], pivotal: dict[str, list[tuple[int, int]]],
) -> tuple[dict[str, tuple[float | None, float | None]], int, int, bool]:
    if not isinstance(out_c, ScoredTokens):
        out_c = ScoredTokens.model_validate(out_c)
    if not isinstance(out_i, ScoredTokens):
        out_i = ScoredTokens.model_validate(out_i)
    lc, li = out_c.logprobs, out_i.logprobs
    tok_c = assign_tokens(text_c, out_c.offsets, segs_c)
    tok_i = assign_tokens(text_i, out_i.offsets, segs_i)
    pairs, unaligned = align(tok_c, tok_i)
    seg_start = {g.id: g.start for g in segs_c}
    d = np.array([math.exp(-(li[ti.index] or 0.0)) - math.exp(-(lc[tc.index] or 0.0)) for tc, ti in pairs],
                 dtype=np.float64)
    piv = np.zeros(len(pairs), dtype=bool)
    per = np.zeros(len(pairs), dtype=bool)
    for k, (tc, _) in enumerate(pairs):
        if tc.segment.startswith("sentence:"):
            which = tc.segment.split(":", 1)[1]
            base = seg_start[tc.segment]
            piv[k] = any(tc.start < base + pe and base + ps < tc.end for ps, pe in pivotal.get(which, []))
        per[k] = is_period(tc.text) and not piv[k]
    other = ~(piv | per)
    result = {"pivotal": proportions(d, piv), "period": proportions(d, per), "other": proportions(d, other)}
    accurate = seq_ppl(lc) < seq_ppl(li)
    return result, unaligned, len(pairs), accurate


# -- the metric --------------------------------------------------------------------------

NOT_FRAMED = "prompt was not built with frame_prompt(clause_a, clause_b, order, a, b)"


def level_vars(ctx: MetricContext, levels: Mapping[str, str]) -> dict[str, Any]:
    """The level variables of a cell (factor levels' `vars`, merged in factor order)."""
    out: dict[str, Any] = {}
    for f, lv in levels.items():
        out.update(ctx.config.factors[f][lv].vars)
    return out


def pivotal_spans(fields: Mapping[str, Any], x: str, y: str) -> dict[str, list[tuple[int, int]]]:
    """Character spans of the pivotal words of sentences a (x) and b (y): the words the
    stimulus lists (`pivotal_a` / `pivotal_b`), else those that differ between the two."""
    if fields.get("pivotal_a") is not None or fields.get("pivotal_b") is not None:
        return {"a": listed_spans(x, list(fields.get("pivotal_a") or [])),
                "b": listed_spans(y, list(fields.get("pivotal_b") or []))}
    sa, sb = word_diff_spans(x, y)
    return {"a": sa, "b": sb}


class PromptPair(NamedTuple):
    """The correct and the incorrect prompt of one stimulus in one cell, by request key."""

    stimulus: str
    cell: str
    correct: str
    incorrect: str


def score_pair(ctx: MetricContext, p: PivotalParams, pair: PromptPair, stim: Mapping[str, Stimulus],
               cells: Mapping[str, Cell]) -> PairResult | Unscorable:
    """One prompt pair analysed, or why it cannot be."""
    rc, ri = ctx.responses[pair.correct], ctx.responses[pair.incorrect]
    out_c, out_i = parse_output(ScoredTokens, rc), parse_output(ScoredTokens, ri)
    if out_c is None or out_i is None:
        return Unscorable(stimulus=pair.stimulus, cell=pair.cell, reason=rc.error or ri.error or "failed")
    fields = stim[pair.stimulus].fields
    vars_ = level_vars(ctx, cells[pair.cell].levels)
    x, y = str(fields[p.a]), str(fields[p.b])
    frame = (vars_[p.clause_a], vars_[p.clause_b], vars_[p.order])
    text_c, segs_c = frame_segments(*frame, x, y, "a", "b")
    text_i, segs_i = frame_segments(*frame, y, x, "b", "a")
    if text_c != ctx.plan.requests[rc.key].text or text_i != ctx.plan.requests[ri.key].text:
        return Unscorable(stimulus=pair.stimulus, cell=pair.cell, reason=NOT_FRAMED)
    res, unaligned, n_aligned, accurate = analyse_pair(out_c, out_i, text_c, text_i, segs_c, segs_i,
                                                       pivotal_spans(fields, x, y))
    pr = PairResult(stimulus=pair.stimulus, cell=pair.cell, fields=fields, accurate=accurate, unaligned=unaligned,
                    aligned=n_aligned, tied=seq_ppl(out_c.logprobs) == seq_ppl(out_i.logprobs))
    for cls in CLASSES:
        pr.plain[cls], pr.normalized[cls] = res[cls]
    return pr


def compute(ctx: MetricContext, metric_id: str, params: BaseModel) -> MetricResult:
    assert isinstance(params, PivotalParams)
    p = params
    stim = {s.id: s for s in ctx.plan.stimuli.stimuli}
    cells = {c.id: c for c in ctx.plan.cells}
    results: list[PairResult] = []
    skipped: list[Unscorable] = []
    for (cell_id, _variant, sid, _sample), slots in ctx.items_by().items():
        if p.correct not in slots or p.incorrect not in slots:
            continue
        got = score_pair(ctx, p, PromptPair(sid, cell_id, slots[p.correct].key, slots[p.incorrect].key), stim, cells)
        if isinstance(got, PairResult):
            results.append(got)
        else:
            skipped.append(got)
    return _summarise(ctx, metric_id, p, results, skipped)


def _estimate(values: list[tuple[str, float]], p: PivotalParams) -> Estimate:
    if not values:
        return Estimate.no_data(CLUSTER_T)
    # a mean over stimuli x prompt pairs: the cluster-robust t interval over stimuli (the
    # percentile cluster bootstrap covered 82.6% at 5 stimuli; stats/means.py)
    e = mean_t_clustered([v for _, v in values], [s for s, _ in values])
    stimuli = len({s for s, _ in values})
    # n counts the stimuli (the resampled units); the rows (stimulus x prompt pair) apart
    return e.model_copy(update={"n": stimuli, "clusters": stimuli, "rows": len(values) if len(values) > stimuli else None})


ALL_TIED = ("undefined: every prompt pair ties (both prompts have the same perplexity), so no preference can be "
            "measured")


def _defined(est: Estimate, results: Sequence[PairResult]) -> Estimate:
    """Accuracy over prompt pairs that all tie says nothing (its 0 is no measurement): undefined."""
    if results and all(r.tied for r in results):
        return Estimate(value=None, ci_low=None, ci_high=None, n=est.n, method=est.method, note=ALL_TIED,
                        subset=est.subset)
    return est


def accuracy_estimate(results: list[PairResult]) -> Estimate:
    """Share of prompt pairs where the correct prompt is the less perplexing one: a
    proportion, so its interval stays inside [0, 1] (Wilson; on the design's effective n
    when a stimulus gives pairs in several prompt conditions). Ties count as not
    accurate; when every pair ties, undefined."""
    return _defined(accuracy_of([Obs(cell=r.cell, cluster=r.stimulus, value=1.0 if r.accurate else 0.0)
                                 for r in results]), results)


def _field_key(name: str) -> Callable[[Obs], str]:
    return lambda o: str(o.fields.get(name, ""))


def accuracy_of(rows: Sequence[Obs]) -> Estimate:
    """`accuracy_estimate` over rows (value 1: accurate), clustered by stimulus. (A t
    interval on per-stimulus means left [0, 1] near perfect accuracy: 0.975 [0.924, 1.026].)"""
    return pooled(rows, proportion)


def _class_estimates(results: list[PairResult], p: PivotalParams) -> dict[str, Estimate]:
    """Plain and normalized proportion per token class, pivotal minus other, and accuracy."""
    est: dict[str, Estimate] = {}
    for cls in CLASSES:
        for kind in ("normalized", "plain"):
            vals = [(r.stimulus, getattr(r, kind)[cls]) for r in results if getattr(r, kind)[cls] is not None]
            est[f"{cls}.{kind}"] = _estimate(vals, p)
    diff = [(r.stimulus, r.normalized["pivotal"] - r.normalized["other"]) for r in results
            if r.normalized["pivotal"] is not None and r.normalized["other"] is not None]
    est["pivotal_minus_other.normalized"] = _estimate(diff, p)
    est["accuracy"] = accuracy_estimate(results)
    return est


def _pivotal_normalized(results: Sequence[PairResult], p: PivotalParams) -> Estimate:
    return _estimate([(r.stimulus, v) for r in results if (v := r.normalized["pivotal"]) is not None], p)


def _conditions(ctx: MetricContext, results: list[PairResult],
                p: PivotalParams) -> tuple[dict[str, int], dict[str, dict[str, Estimate]]]:
    """Prompt pairs, and accuracy and pivotal normalized proportion (the result's `cells`),
    per prompt condition (cell), in plan order."""
    pairs: dict[str, int] = {}
    cells: dict[str, dict[str, Estimate]] = {"accuracy": {}, "pivotal.normalized": {}}
    for cid in [c.id for c in ctx.plan.cells]:
        sub = [r for r in results if r.cell == cid]
        pairs[cid] = len(sub)
        cells["accuracy"][cid] = accuracy_estimate(sub)
        cells["pivotal.normalized"][cid] = _pivotal_normalized(sub, p)
    return pairs, cells


def _breakdown(fld: str, results: list[PairResult], p: PivotalParams) -> tuple[FieldDetail, dict[str, Estimate]]:
    """Accuracy (group -> estimate) and pivotal normalized proportion per group of the
    stimulus field `fld`."""
    acc_rows = [Obs(cell=r.cell, cluster=r.stimulus, value=1.0 if r.accurate else 0.0, fields=r.fields)
                for r in results]
    piv_rows = [Obs(cell=r.cell, cluster=r.stimulus, value=v, fields=r.fields) for r in results
                if (v := r.normalized["pivotal"]) is not None]

    def normalized_of(rows: Sequence[Obs]) -> Estimate:
        return _estimate([(o.cluster, o.value) for o in rows], p)

    accs = {g: _defined(a, [r for r in results if str(r.fields.get(fld, "")) == g])
            for g, a in by_group(acc_rows, fld, accuracy_of, pool=False).items()}
    norms = by_group(piv_rows, fld, normalized_of, pool=False)
    stimuli = split(acc_rows, _field_key(fld))
    return FieldDetail(field=fld, groups=[
        GroupDetail(group=g, stimuli=len({o.cluster for o in stimuli[g]}),
                    normalized=norms.get(g, Estimate.no_data(CLUSTER_T)))
        for g in accs], contrasts=group_contrasts(acc_rows, fld) if p.contrasts else None), accs


def _spread(results: list[PairResult]) -> dict[str, Spread]:
    """Spread across prompt conditions of accuracy (unless every pair ties) and of the
    pivotal normalized proportion."""
    spread = {}
    acc = cell_spread([r.cell for r in results], [r.stimulus for r in results],
                      [1.0 if r.accurate else 0.0 for r in results])
    if acc and not all(r.tied for r in results):
        spread["accuracy"] = acc
    piv = [r for r in results if r.normalized["pivotal"] is not None]
    nrm = cell_spread([r.cell for r in piv], [r.stimulus for r in piv], [r.normalized["pivotal"] for r in piv])  # type: ignore[misc]
    if nrm:
        spread["pivotal.normalized"] = nrm
    return spread


def _summarise(ctx: MetricContext, metric_id: str, p: PivotalParams, results: list[PairResult],
               skipped: list[Unscorable]) -> MetricResult:
    est = _class_estimates(results, p)
    pairs, cells = _conditions(ctx, results, p)
    breakdowns = []
    for fld in p.by:
        b, accs = _breakdown(fld, results, p)
        breakdowns.append(b)
        est.update((f"accuracy.{fld}.{g}", a) for g, a in accs.items())
        if b.contrasts is not None:  # a group whose every pair ties has no accuracy: nor its differences
            est.update(defined_contrasts(contrast_estimates(b.contrasts, f"accuracy.{fld}", field=fld), b.contrasts, accs))
    # the pivotal class's proportions are the item rows' `diff`
    normalized = {cls: [v for r in results if (v := r.normalized[cls]) is not None] for cls in CLASSES[1:]}
    detail = PivotalDetail(pairs=pairs, breakdowns=breakdowns, normalized=normalized, unscorable=skipped)
    unaligned = sum(r.unaligned for r in results)
    aligned = sum(r.aligned for r in results)
    reliability = [
        ReliabilityItem(name="unscorable prompt pairs", estimate=wilson(len(skipped), len(results) + len(skipped)),
                        note="failed requests or prompts the frame could not align"),
        ReliabilityItem(name="unaligned tokens", estimate=wilson(unaligned, aligned + unaligned),
                        note="tokens with no partner in the other prompt, left out of the sums"),
    ]
    return MetricResult(
        id=metric_id, name="pivotal_perplexity", title="Pivotal-token perplexity",
        headline="pivotal.normalized", estimates=est, cells=cells, reference=0.0, spread=_spread(results),
        reliability=reliability,
        reference_note="Normalized proportion > 0: pivotal tokens explain more of the perplexity difference "
                       "between the correct and incorrect prompt than the median token (perplexed for the right "
                       "reason). Accuracy: share of prompt pairs where the correct prompt has the lower perplexity.",
        counts={"prompt_pairs": len(results) + len(skipped), "scored": len(results), "unscorable": len(skipped),
                "stimuli": len({r.stimulus for r in results}), "aligned_tokens": aligned, "unaligned_tokens": unaligned},
        notes=[f"{unaligned} tokens had no partner in the other prompt and were left out of the sums "
               f"({aligned} aligned token pairs)."],
        items=[ctx.item(r.stimulus, r.cell, r.fields, diff=r.normalized["pivotal"], accurate=int(r.accurate))
               for r in results if r.normalized["pivotal"] is not None],
        params=p.model_dump(),
        detail=detail.model_dump(mode="json"),
    )


def check_spec(params: BaseModel, cfg: AuditConfig) -> str | None:
    """`correct` and `incorrect` (the correct and the incorrect prompt) are two different input slots of the probe: the metric
    skips a stimulus without both, so a misspelt slot would score nothing."""
    assert isinstance(params, PivotalParams)
    check_slots(cfg, {"correct": params.correct, "incorrect": params.incorrect})
    return None


def check(params: BaseModel, probe_kind: str) -> str | None:
    return None if probe_kind == "sequence_logprob" else "pivotal_perplexity needs probe kind 'sequence_logprob'"
