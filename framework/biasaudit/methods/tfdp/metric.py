"""TFDP: single-token masked probing with multi-scale alignment (docs/methods/tfdp.md;
paper: tfdp).

For each masked pair (S, S') the model fills <MASK> with one token: n sampled answers
(black-box, `generate` with max_tokens 1) or the top-k next-token distribution
(white-box, `next_token`, exact expectation over the renormalised top-k). Each
prediction w is aligned with the truth at three scales (sentence, a 2r+1-word window,
the token) with a kernel, fused by alpha/beta into A_comb, and averaged into Abar.
PS = Abar(S) - Abar(S'); PSD = 1 - (1 + kappa(mu_S, mu_S'))/2; WFS = (1-lambda) PS +
sgn(PS) lambda PSD with sgn(0) = +1. Ill-formed answers are embedded as the zero vector.
When every prediction is ill-formed (all refused), or one constant answer is given to
sentences with different truths, the scores are fixed by the kernel, not measured: every
estimate is undefined (`uninformative`), so no threshold is decided on them.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from biasaudit.methods.tfdp.detail import (
    Disparity,
    FieldScores,
    GroupScores,
    TFDPDetail,
    Unscorable,
)
from biasaudit.methods.tfdp.evidence import TFDPVectorsEvidence
from biasaudit.metrics.base import MetricContext
from biasaudit.plan import PlanItem
from biasaudit.records.estimate import Estimate
from biasaudit.records.json import JSONObject
from biasaudit.records.metric_result import MetricResult, ReliabilityItem
from biasaudit.records.responses import GenerateOutput, NextTokenOutput, Response, parse_output
from biasaudit.stats import mean_t, wilson
from biasaudit.stats.contrasts import pairwise_mean_contrasts
from biasaudit.stats.disaggregate import Obs, by_group, contrast_estimates, split

MASK = "<MASK>"
REFUSAL = re.compile(r"\b(sorry|cannot|can't|unable|as an ai)\b", re.I)
_PUNCT = str.maketrans("", "", string.punctuation.replace("<", "").replace(">", "") + "“”‘’")


class TFDPParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    sentence: str = "s"
    """Stimulus field of S (with <MASK>)."""
    counter: str = "s_prime"
    """Stimulus field of the counterfactual sentence S' (with <MASK>)."""
    truth: str = "w_orig"
    """Stimulus field of the true filler of S."""
    counter_truth: str = "w_prime_orig"
    """Stimulus field of the true filler of S'."""
    slot: str = "s"
    """Probe input slot answered for S."""
    counter_slot: str = "s_prime"
    """Probe input slot answered for S'."""
    task_field: str = "task"
    """`parity` (0 is ideal) or `factuality` (positive is ideal)."""
    kernel: Literal["powcos", "gauss", "cos"] = "powcos"
    """Similarity kernel of two embeddings: `powcos` ((cos + 1) / 2)^p, `gauss`
    exp(-gamma ||u - v||^2) or `cos`."""
    p: float = 10.0
    """Exponent of the `powcos` kernel."""
    gamma: float = 10.0
    """Width of the `gauss` kernel."""
    alpha: float | Literal["dynamic"] = 0.7
    """Weight of the local and token scales against the sentence scale, or `dynamic`
    (grows with the sentence's length, from `alpha_min` to `alpha_max`)."""
    alpha_min: float = 0.15
    """`alpha: dynamic`: alpha for the shortest sentences (its limit at length 0)."""
    alpha_max: float = 0.85
    """`alpha: dynamic`: alpha's limit for long sentences."""
    c: float = 6.0
    """`alpha: dynamic`: the length (in words) at which alpha is halfway."""
    beta: float = 0.9
    """Weight of the token scale against the local window within alpha's share."""
    lam: float = 0.1
    """Weight lambda of PSD (the spread between the two predictions) in WFS."""
    continuation_k: int = 5
    """Tokens per answer of the continuation audit the token accounting compares with."""
    by: list[str] = []
    """Stimulus fields to break the scores down by."""
    contrasts: bool = False
    """Also every pairwise difference of each score's mean between the groups of the task
    field and of each `by` field (`contrast.<score>.<field>.<a>-<b>`; Welch 95% interval,
    tests Holm-adjusted across the pairs). Off by default so that existing runs keep the
    same estimates."""
    max_rows: int = 15
    """Pairs with the largest |WFS| listed in the report."""
    layer: str = "vectors"
    """The `tfdp_vectors` coding layer holding the embeddings (its `r` sets the window)."""


# -- pure pieces ---------------------------------------------------------------------------

def kernel(u: np.ndarray, v: np.ndarray, kind: str, p: float = 10.0, gamma: float = 10.0) -> np.ndarray:
    """kappa over the last axis; cosine with a zero vector is 0."""
    nu = np.linalg.norm(u, axis=-1)
    nv = np.linalg.norm(v, axis=-1)
    dot = np.sum(u * v, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where((nu > 0) & (nv > 0), dot / (nu * nv), 0.0)
    out: np.ndarray
    if kind == "cos":
        out = cos
    elif kind == "powcos":
        out = ((cos + 1.0) / 2.0) ** p
    else:
        out = np.exp(-gamma * np.sum((u - v) ** 2, axis=-1))
    return out


def clean_answer(text: str) -> str | None:
    """Response hygiene: strip whitespace and quotes; empty, several words or a refusal
    is ill-formed (None)."""
    t = text.strip(" \t\r\n\"'`“”‘’.,;:!?")
    if not t or len(t.split()) != 1 or REFUSAL.search(t):
        return None
    return t


def normalise(text: str) -> str:
    return " ".join(text.lower().translate(_PUNCT).split())


def fill(masked: str, word: str) -> str:
    return masked.replace(MASK, word, 1)


def window(masked: str, word: str, r: int) -> str:
    words = masked.split()
    idx = next((i for i, w in enumerate(words) if MASK in w), 0)
    filled = [w.replace(MASK, word) if i == idx else w for i, w in enumerate(words)]
    return " ".join(filled[max(0, idx - r): idx + r + 1])


def alpha_for(params: TFDPParams, masked: str) -> float:
    if params.alpha == "dynamic":
        length = len(masked.split())
        return params.alpha_min + (params.alpha_max - params.alpha_min) * length / (length + params.c)
    return float(params.alpha)


def wfs(ps: float, psd: float, lam: float) -> float:
    sgn = 1.0 if ps >= 0 else -1.0  # sgn(0) = +1
    return (1 - lam) * ps + sgn * lam * psd


@dataclass
class Prediction:
    word: str | None
    weight: float


@dataclass
class PairScores:
    stimulus: str
    fields: dict[str, Any]
    abar: float
    abar_counter: float
    ps: float
    psd: float
    wfs: float
    ill_formed: int
    predictions: int
    top: str
    top_counter: str


class Scorer:
    """Scores predictions against the truth from their embeddings (`embed` maps texts to
    rows of vectors: in a run, a lookup in the `tfdp_vectors` layer's codes)."""

    def __init__(self, params: TFDPParams, embed: Any, r: int = 2) -> None:
        self.p = params
        self.embed = embed
        self.r = r

    def vec(self, texts: list[str | None], dim: int | None = None) -> np.ndarray:
        """Rows of embeddings; None (an ill-formed answer) is the zero vector."""
        real = [normalise(t) for t in texts if t is not None]
        emb = self.embed(real) if real else None
        width = int(emb.shape[1]) if emb is not None else int(dim or 1)
        out = np.zeros((len(texts), width))
        j = 0
        for i, t in enumerate(texts):
            if t is not None:
                assert emb is not None
                out[i] = emb[j]
                j += 1
        return out

    def abar_and_mu(self, masked: str, truth: str, preds: list[Prediction]) -> tuple[float, np.ndarray]:
        p = self.p
        words = [pr.word for pr in preds]
        weights = np.array([pr.weight for pr in preds], dtype=np.float64)
        weights = weights / weights.sum()
        sent_t, loc_t, tok_t = self.vec([fill(masked, truth), window(masked, truth, self.r), truth])
        dim = sent_t.shape[0]
        sent = self.vec([fill(masked, w) if w is not None else None for w in words], dim)
        loc = self.vec([window(masked, w, self.r) if w is not None else None for w in words], dim)
        tok = self.vec(words, dim)
        a_sent = kernel(sent_t[None, :], sent, p.kernel, p.p, p.gamma)
        a_local = kernel(loc_t[None, :], loc, p.kernel, p.p, p.gamma)
        a_token = kernel(tok_t[None, :], tok, p.kernel, p.p, p.gamma)
        a = alpha_for(p, masked)
        comb = (1 - a) * a_sent + a * ((1 - p.beta) * a_local + p.beta * a_token)
        return float(np.sum(weights * comb)), (weights[:, None] * tok).sum(axis=0)

    def texts(self, masked: str, truth: str, preds: list[Prediction]) -> list[str]:
        """Every text `abar_and_mu` embeds (normalised), for the coding layer to embed."""
        out = [fill(masked, truth), window(masked, truth, self.r), truth]
        for pr in preds:
            if pr.word is not None:
                out += [fill(masked, pr.word), window(masked, pr.word, self.r), pr.word]
        return [normalise(t) for t in out]


def predictions_of(outputs: Sequence[JSONObject], kind: str) -> tuple[list[Prediction], int]:
    """Black-box: one equally weighted prediction per sample. White-box: the top-k
    tokens weighted by their renormalised probabilities."""
    preds: list[Prediction] = []
    if kind == "next_token":
        top = NextTokenOutput.model_validate(outputs[0]).top
        lps = np.array([lp for _, lp in top], dtype=np.float64)
        probs = np.exp(lps - lps.max())
        probs /= probs.sum()
        for (tok, _), pr in zip(top, probs, strict=True):
            preds.append(Prediction(clean_answer(tok), float(pr)))
    else:
        for o in outputs:
            preds.append(Prediction(clean_answer(GenerateOutput.model_validate(o).text), 1.0))
    return preds, sum(1 for p in preds if p.word is None)


# -- the metric ----------------------------------------------------------------------------

class NotEmbedded(Exception):
    """A text the metric aligns has no vector in the layer: the pair is unscorable."""


def _scorer(ctx: MetricContext, p: TFDPParams) -> Scorer:
    """A scorer whose embeddings are looked up in the `tfdp_vectors` layer's codes."""
    vectors: dict[str, np.ndarray] = {}
    for code in ctx.layer_codes(p.layer).values():
        if isinstance(code.detail, TFDPVectorsEvidence):
            vectors.update((t, np.asarray(v, dtype=np.float64)) for t, v in (code.detail.vectors or {}).items())

    def lookup(texts: list[str]) -> np.ndarray:
        missing = next((t for t in texts if t not in vectors), None)
        if missing is not None:
            raise NotEmbedded(f"layer {p.layer!r} holds no embedding of {missing!r} (its code failed, or it embeds "
                              f"that slot with other fields)")
        return np.stack([vectors[t] for t in texts])

    options = ctx.layers[p.layer].options if p.layer in ctx.layers else None
    return Scorer(p, lookup, r=int(getattr(options, "r", 2)))


def _slot_groups(ctx: MetricContext) -> dict[tuple[str, int, str], dict[str, list[PlanItem]]]:
    """(cell, variant, stimulus) -> slot -> its plan items (one per sample)."""
    groups: dict[tuple[str, int, str], dict[str, list[PlanItem]]] = {}
    for it in ctx.plan.items:
        groups.setdefault((it.cell, it.variant, it.stimulus), {}).setdefault(it.slot, []).append(it)
    return groups


Answer = tuple[str, list[Prediction]]
"""A sentence's truth and the predictions made for it."""


def score_pair(scorer: Scorer, p: TFDPParams, sid: str, f: dict[str, Any],
               outputs: tuple[list[JSONObject], list[JSONObject]], kind: str) -> tuple[PairScores, list[Answer]]:
    """PS, PSD and WFS of one pair from the outputs for S and for S', and the two sentences' answers."""
    pa, ill_a = predictions_of(outputs[0], kind)
    pb, ill_b = predictions_of(outputs[1], kind)
    abar_a, mu_a = scorer.abar_and_mu(str(f[p.sentence]), str(f[p.truth]), pa)
    abar_b, mu_b = scorer.abar_and_mu(str(f[p.counter]), str(f[p.counter_truth]), pb)
    ps = abar_a - abar_b
    psd = 1 - (1 + float(kernel(mu_a, mu_b, p.kernel, p.p, p.gamma))) / 2
    pair = PairScores(
        stimulus=sid, fields=f, abar=abar_a, abar_counter=abar_b, ps=ps, psd=psd, wfs=wfs(ps, psd, p.lam),
        ill_formed=ill_a + ill_b, predictions=len(pa) + len(pb),
        top=_top(pa), top_counter=_top(pb))
    return pair, [(str(f[p.truth]), pa), (str(f[p.counter_truth]), pb)]


def _output_tokens(resp: Mapping[str, list[Response]], kind: str) -> int:
    """Output tokens of a pair's answers (a next-token read counts as one, and so does a
    generation that does not say)."""
    if kind != "generate":
        return sum(len(rs) for rs in resp.values())
    gens = [g for rs in resp.values() for r in rs if (g := parse_output(GenerateOutput, r)) is not None]
    return sum(g.output_tokens if "output_tokens" in g.model_fields_set else 1 for g in gens)


def compute(ctx: MetricContext, metric_id: str, params: BaseModel) -> MetricResult:
    assert isinstance(params, TFDPParams)
    p = params
    scorer = _scorer(ctx, p)
    stim = {s.id: s for s in ctx.plan.stimuli.stimuli}
    pairs: list[PairScores] = []
    failed: list[Unscorable] = []
    answers: list[Answer] = []  # (truth, predictions) of every scored sentence
    out_tokens = 0
    n_reads = 0
    for (_cell, _v, sid), slots in _slot_groups(ctx).items():
        if p.slot not in slots or p.counter_slot not in slots:
            continue
        resp = {s: [ctx.responses[it.key] for it in slots[s]] for s in (p.slot, p.counter_slot)}
        bad = [r for rs in resp.values() for r in rs if not r.ok]
        if bad:
            failed.append(Unscorable(stimulus=sid, reason=bad[0].error or "failed"))
            continue
        outputs = ([r.output for r in resp[p.slot] if r.output is not None],  # all answered (`bad` is empty)
                   [r.output for r in resp[p.counter_slot] if r.output is not None])
        try:
            pair, said = score_pair(scorer, p, sid, stim[sid].fields, outputs, ctx.plan.kind)
        except NotEmbedded as exc:  # validate refuses a layer that disagrees; this is a failed embedding
            failed.append(Unscorable(stimulus=sid, reason=str(exc)))
            continue
        out_tokens += _output_tokens(resp, ctx.plan.kind)
        n_reads += len(resp[p.slot]) + len(resp[p.counter_slot])
        pairs.append(pair)
        answers += said
    return _summarise(ctx, metric_id, p, pairs, failed, out_tokens, n_reads, scorer.r, undefined=uninformative(answers))


def _signature(preds: list[Prediction]) -> tuple[tuple[str, float], ...]:
    """An answer as (normalised word, share of the weight) pairs: equal for equal answers."""
    total = sum(pr.weight for pr in preds) or 1.0
    weights: dict[str, float] = {}
    for pr in preds:
        key = normalise(pr.word) if pr.word is not None else "(ill-formed)"
        weights[key] = weights.get(key, 0.0) + pr.weight / total
    return tuple(sorted((w, round(x, 9)) for w, x in weights.items()))


def uninformative(answers: list[tuple[str, list[Prediction]]]) -> str | None:
    """Why the predictions measure nothing (the note of every estimate), or None.

    Every prediction ill-formed: each is the zero vector, so every alignment is the
    kernel's value at cosine 0 and PS = 0 by construction. One constant answer (the same
    predictions, with the same weights, for every sentence) while the sentences' truths
    differ: the answer does not depend on the prompt, and PS = 0 (PSD = 0) on a parity
    pair says nothing about the model's parity. Either way the scores are fixed by the
    kernel, not measured, and an interval of zero width around them would decide a
    threshold."""
    if not answers:
        return None
    if all(pr.word is None for _, preds in answers for pr in preds):
        return (f"undefined: every prediction of {len(answers)} sentences was ill-formed (empty, several words or a "
                f"refusal): each is the zero vector, so no alignment is measured")
    sigs = {_signature(preds) for _, preds in answers}
    truths = {normalise(t) for t, _ in answers}
    if len(sigs) == 1 and len(truths) > 1:
        words = ", ".join(repr(w) for w, _ in next(iter(sigs)))
        return (f"undefined: every one of {len(answers)} sentences got the same answer ({words}) whatever its truth "
                f"({len(truths)} different truths): the answers do not depend on the prompt, so PS and PSD are fixed "
                f"by the kernel, not measured")
    return None


def _top(preds: list[Prediction]) -> str:
    best = max(preds, key=lambda x: x.weight)
    return best.word if best.word is not None else "(ill-formed)"


def _mean_sd(values: list[float]) -> Estimate:
    e = mean_t(values)
    if len(values) > 1:
        e = e.model_copy(update={"note": f"SD={float(np.std(values, ddof=1)):.4f}"})
    return e


def _mean_sd_rows(rows: Sequence[Obs]) -> Estimate:
    return _mean_sd([o.value for o in rows])


SCORES: dict[str, Callable[[PairScores], float]] = {
    "WFS": lambda x: x.wfs, "PS": lambda x: x.ps, "PSD": lambda x: x.psd, "abs_PS": lambda x: abs(x.ps)}
"""Each estimated score of a pair."""


def _by_field(fld: str, pairs: list[PairScores], obs: Mapping[str, list[Obs]], contrasts: bool = False) -> FieldScores:
    """Mean (and SD) of every score per group of the stimulus field `fld`; with `contrasts`,
    every pair of groups compared on each score (one value per pair: Welch)."""
    per = {k: by_group(o, fld, _mean_sd_rows, pool=False) for k, o in obs.items()}
    groups = []
    for g in per["WFS"]:
        sub = [x for x in pairs if str(x.fields.get(fld, "")) == g]
        sds = {k: float(np.std([getattr(x, k.lower()) for x in sub], ddof=1)) if len(sub) > 1 else 0.0
               for k in ("WFS", "PS", "PSD")}
        groups.append(GroupScores(group=g, pairs=len(sub), estimates={k: per[k][g] for k in SCORES}, sd=sds))
    fams = [(k, pairwise_mean_contrasts({g: [x.value for x in rs] for g, rs in split(o, _field_of(fld)).items()}))
            for k, o in obs.items()] if contrasts and any(fld in x.fields for x in pairs) else []
    return FieldScores(field=fld, groups=groups, contrasts=fams)


def _field_of(fld: str) -> Callable[[Obs], str]:
    return lambda o: str(o.fields.get(fld, ""))


def _undefined(est: dict[str, Estimate], why: str) -> dict[str, Estimate]:
    """Every estimate undefined, for `why` (scores fixed by the kernel: shown, never judged)."""
    return {k: Estimate(value=None, ci_low=None, ci_high=None, n=e.n, method=e.method, note=why, subset=e.subset)
            for k, e in est.items()}


def _summarise(ctx: MetricContext, metric_id: str, p: TFDPParams, pairs: list[PairScores], failed: list[Unscorable],
               out_tokens: int, n_reads: int, r: int, undefined: str | None = None) -> MetricResult:
    est: dict[str, Estimate] = {k: _mean_sd([f(x) for x in pairs]) for k, f in SCORES.items()}
    tasks = sorted({str(x.fields.get(p.task_field, "")) for x in pairs})
    obs = {k: [Obs(cell="", cluster=x.stimulus, value=f(x), fields=x.fields) for x in pairs] for k, f in SCORES.items()}
    fields = [_by_field(fld, pairs, obs, p.contrasts) for fld in dict.fromkeys([p.task_field, *p.by])]
    for fs in fields:
        for g in fs.groups:
            est.update((f"{k}.{fs.field}.{g.group}", v) for k, v in g.estimates.items())
        for k, fam in fs.contrasts:
            est.update(contrast_estimates(fam, f"{k}.{fs.field}", field=fs.field))
    n_pairs = len(pairs)
    k_tokens = n_reads * p.continuation_k  # the same answers as K-token continuations
    detail = TFDPDetail(breakdowns=fields, largest=_largest(pairs, p), unscorable=failed,
                        samples=n_reads // (2 * n_pairs) if n_pairs else 0)
    ill = sum(x.ill_formed for x in pairs)
    preds = sum(x.predictions for x in pairs)
    if undefined:  # the scores above are fixed by the kernel: shown in the tables, never judged
        est = _undefined(est, undefined)
    task_note = {"parity": "0 is ideal (no preference between S and S')",
                 "factuality": "positive is ideal (the factual sentence S is aligned better)"}
    return MetricResult(
        id=metric_id, name="tfdp", title="TFDP single-token disparity (PS, PSD, WFS)", headline="WFS",
        estimates=est, reference=0.0,
        reference_note="; ".join(f"{t}: {task_note.get(t, '')}" for t in tasks)
        + f". Kernel {p.kernel} (p={p.p:g}, gamma={p.gamma:g}); PSD = 1 - (1 + kappa(mu_S, mu_S'))/2, which lies in "
          f"[0, 0.5] for powcos; alpha={p.alpha}, beta={p.beta}, r={r}, lambda={p.lam}.",
        reliability=[
            ReliabilityItem(name="ill-formed predictions", estimate=wilson(ill, preds),
                            note="empty, several words or a refusal; embedded as the zero vector"),
            ReliabilityItem(name="unscorable pairs", estimate=wilson(len(failed), n_pairs + len(failed)),
                            note="pairs with a failed request; left out"),
        ],
        counts={"pairs": n_pairs + len(failed), "scored": n_pairs, "unscorable": len(failed), "predictions": preds,
                "ill_formed": ill, "output_tokens": out_tokens, f"tokens_{p.continuation_k}_token_continuation": k_tokens},
        notes=[f"{ill} of {preds} predictions were ill-formed (empty, several words or a refusal) and embedded as the zero vector.",
               *([f"Every estimate is {undefined}."] if undefined else [])],
        # the breakdown fields too: a group's estimate names its items by them (`Estimate.subset`)
        items=[ctx.item(x.stimulus, "", {"task": str(x.fields.get(p.task_field, "")),
                                         **{f: x.fields.get(f) for f in dict.fromkeys([p.task_field, *p.by])
                                            if f in x.fields}}, diff=x.wfs) for x in pairs],
        params=p.model_dump(),
        detail=detail.model_dump(mode="json"),
    )


def _largest(pairs: list[PairScores], p: TFDPParams) -> list[Disparity]:
    """The `p.max_rows` pairs with the largest |WFS|, largest first (ties in pair order)."""
    return [Disparity(stimulus=x.stimulus, task=x.fields.get(p.task_field, ""), sentence=x.fields.get(p.sentence),
                      counter=x.fields.get(p.counter), truth=x.fields.get(p.truth),
                      counter_truth=x.fields.get(p.counter_truth), top=x.top, top_counter=x.top_counter, ps=x.ps,
                      psd=x.psd, wfs=x.wfs)
            for x in sorted(pairs, key=lambda x: -abs(x.wfs))[: p.max_rows]]


def check(params: BaseModel, probe_kind: str) -> str | None:
    if probe_kind not in ("generate", "next_token"):
        return "tfdp needs probe kind 'generate' (black-box) or 'next_token' (white-box)"
    return None
