"""Self-test oracles of TFDP (`biasaudit selftest`), black-box (`generate`: one word per
sample) and white-box (`next_token`: the probability on one or two tokens).

What the model fills the mask with, per pair (S, S') with truths (w, w'):

- a `parity` pair (S and S' differ by the group, e.g. a man's and a woman's proverb)
  with one truth w = w': the target (stereotyped) side fills S with w and S' with a
  stereotyped word (`STEREOTYPED`); the other side is its mirror, S with that word and
  S' with w. With two truths ("Like father, like son / daughter"): the target side
  fills both with S's word w (S' read as S), the other side both with w';
- a `factuality` pair (S factual, S' its misinformative twin): the target (misinformed)
  side fills both sentences with the misinformation's word w' (the model believes it),
  the other (informed) side both with the fact's word w.

`planted` takes the target side in every answer. `null` takes it in exactly half of its
answers to every sentence: the samples alternate between the sides, starting on the
target side for the stimuli of the balanced assignment (one sample: the stimulus's side),
and white-box puts half the probability on each side's word. So under `null` S and S'
get the same answers on every pair (with an even number of samples). `ties`: one
constant answer to every sentence ("the"; white-box: the same four tokens at equal
probability). The embedder gives each distinct (normalised) text a direction of its
own: equal texts have cosine 1, different ones 0.

True values (docs/methods/tfdp.md), by hand: a prediction equal to the truth is
aligned 1 at every scale (A_comb = 1); a different word changes the filled sentence, the
window and the token, each orthogonal to the truth's, so A_comb = o, the kernel at
cosine 0 (powcos 2^-p, cos 0, gauss exp(-2 gamma)), whatever alpha and beta. Abar is the
weighted mean of A_comb and mu the weighted mean of the predictions' one-hot word
vectors:

- `planted` parity, one truth: PS = 1 - o; mu_S, mu_S' are orthogonal: PSD =
  1 - (1 + o) / 2 = (1 - o) / 2; WFS = (1 - lambda)(1 - o) + lambda (1 - o) / 2 =
  (1 - o)(1 - lambda / 2), 0.94907 at p = 10, lambda = 0.1; two truths: PS = 1 - o, both
  predictions w: PSD = 0, WFS = (1 - lambda)(1 - o), 0.89912;
- `planted` factuality: PS = o - 1; both predictions w': PSD = 0;
  WFS = -(1 - lambda)(1 - o), -0.89912; a pair whose truths are one word (w = w', the
  misinformation is elsewhere in S') has PS = PSD = WFS = 0: a filler cannot show it;
- `null`: S and S' get the same mixture, Abar(S) = Abar(S') and mu_S = mu_S', so PS =
  PSD = WFS = 0 on every pair.

`plan_truth` evaluates these on every pair of the plan (and per `task` and `by` group),
from the share of target-side answers each sentence gets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from biasaudit.coding.base import CodingRequest
from biasaudit.methods.oracle_kit import (
    OracleCase,
    OracleDef,
    balanced_sides,
    found_in,
    generated,
    keyed_embedding,
    request_text,
)
from biasaudit.methods.tfdp.metric import TFDPParams, normalise

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared

STEREOTYPED = ("kitchen", "cooking")
"""The stereotyped filler of a parity pair's S' (the second where the first is a truth)."""
CONSTANT = ("the", "a", "it", "this")
"""`ties`: the one answer to every sentence (black-box: the first word)."""


def stereotyped(w: str, w_prime: str) -> str:
    return next(x for x in STEREOTYPED if normalise(x) not in (normalise(w), normalise(w_prime)))


def fillers(p: TFDPParams, fields: Mapping[str, Any], target: bool) -> tuple[str, str]:
    """(S's filler, S''s filler) on the target side (stereotyped / misinformed) or the other."""
    w, w_prime = str(fields[p.truth]), str(fields[p.counter_truth])
    if str(fields.get(p.task_field, "parity")) == "factuality":
        return (w_prime, w_prime) if target else (w, w)
    if normalise(w) != normalise(w_prime):  # "Like father, like son": S's word for both, or S''s
        return (w, w) if target else (w_prime, w_prime)
    other = stereotyped(w, w_prime)
    return (w, other) if target else (other, w_prime)


def on_target(kind: str, side: bool, sample: int) -> bool:
    """Whether this sample's answer takes the target side: always under `planted`;
    under `null` every other sample, the first on the stimulus's side."""
    return kind == "planted" or (sample % 2 == 0) == side


def answer(p: TFDPParams, fields: Mapping[str, Any], slot: str, share: float) -> dict[str, float]:
    """The answer to one sentence: word -> probability, `share` of it on the target side."""
    i = 0 if slot == p.slot else 1
    out: dict[str, float] = {}
    for target, weight in ((True, share), (False, 1.0 - share)):
        if weight > 0:
            word = fillers(p, fields, target)[i]
            out[word] = out.get(word, 0.0) + weight
    return out


def respond(case: OracleCase) -> dict[str, Any] | None:
    p = case.params
    assert isinstance(p, TFDPParams)
    white = case.request.kind == "next_token"
    if case.kind == "ties":
        if white:
            return {"top": [[f" {t}", math.log(1 / len(CONSTANT))] for t in CONSTANT]}
        return generated(CONSTANT[0])
    if case.item.slot not in (p.slot, p.counter_slot):
        return None
    if white:  # one read of the distribution: the null model's is half on each side
        dist = answer(p, case.fields, case.item.slot, 1.0 if case.kind == "planted" else 0.5)
        return {"top": [[f" {w}", math.log(x)] for w, x in dist.items()]}
    i = 0 if case.item.slot == p.slot else 1
    return generated(fillers(p, case.fields, on_target(case.kind, case.side, case.item.sample))[i])


def code(kind: str, request: CodingRequest, intents: Mapping[str, str]) -> dict[str, Any] | None:
    """A deterministic embedder: one direction per distinct text."""
    if request.kind != "embed":
        return None
    return keyed_embedding([request.text or ""])


def orthogonal_kernel(p: TFDPParams) -> float:
    """kappa of two orthogonal unit vectors: ((0 + 1) / 2)^p, 0 or exp(-gamma * 2)."""
    values: dict[str, float] = {"powcos": 0.5 ** p.p, "cos": 0.0, "gauss": math.exp(-2.0 * p.gamma)}
    return values[p.kernel]


def mean_kernel(p: TFDPParams, a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """kappa(mu_a, mu_b) for mu the weighted sum of one-hot word vectors."""
    keys = set(a) | set(b)
    if p.kernel == "gauss":
        return math.exp(-p.gamma * sum((a.get(k, 0.0) - b.get(k, 0.0)) ** 2 for k in keys))
    na, nb = math.sqrt(sum(x * x for x in a.values())), math.sqrt(sum(x * x for x in b.values()))
    cos = sum(a.get(k, 0.0) * b.get(k, 0.0) for k in keys) / (na * nb) if na and nb else 0.0
    return cos if p.kernel == "cos" else ((cos + 1) / 2) ** p.p


def pair_truth(p: TFDPParams, fields: Mapping[str, Any], share_s: float, share_sp: float) -> dict[str, float]:
    """PS, PSD, WFS and |PS| of one pair whose sentences take the target side in the
    shares `share_s` and `share_sp` of their answers, by hand (see the module text)."""
    o = orthogonal_kernel(p)
    a = {normalise(w): x for w, x in answer(p, fields, p.slot, share_s).items()}
    b = {normalise(w): x for w, x in answer(p, fields, p.counter_slot, share_sp).items()}
    w, w_prime = normalise(str(fields[p.truth])), normalise(str(fields[p.counter_truth]))
    abar_s = sum(x * (1.0 if word == w else o) for word, x in a.items())
    abar_sp = sum(x * (1.0 if word == w_prime else o) for word, x in b.items())
    ps = abar_s - abar_sp
    psd = 1 - (1 + mean_kernel(p, a, b)) / 2
    wfs = (1 - p.lam) * ps + (1.0 if ps >= 0 else -1.0) * p.lam * psd
    return {"WFS": wfs, "PS": ps, "PSD": psd, "abs_PS": abs(ps)}


def plan_truth(kind: str, params: BaseModel, prep: Prepared) -> Mapping[str, float]:
    assert isinstance(params, TFDPParams)
    p = params
    if kind not in ("planted", "null"):
        return {}  # refusals (ill-formed or failed) and one constant answer: nothing is measured
    stimuli = {s.id: s.fields for s in prep.stimuli.stimuli}
    sides = balanced_sides(list(stimuli), prep.composed.config.runtime.seed)
    # the samples of each sentence of each pair (cell, variant, stimulus), as the metric groups them
    samples: dict[tuple[str, int, str], dict[str, set[int]]] = {}
    for it in prep.plan.items:
        samples.setdefault((it.cell, it.variant, it.stimulus), {}).setdefault(it.slot, set()).add(it.sample)

    def share(sid: str, ks: set[int]) -> float:
        if kind == "planted":
            return 1.0
        if prep.plan.kind == "next_token":
            return 0.5
        return sum(on_target(kind, sides[sid], k) for k in ks) / len(ks)

    per: list[tuple[str, dict[str, float]]] = [
        (sid, pair_truth(p, stimuli[sid], share(sid, slots[p.slot]), share(sid, slots[p.counter_slot])))
        for (_, _, sid), slots in samples.items() if p.slot in slots and p.counter_slot in slots]
    if not per:
        return {}

    def mean(rows: list[dict[str, float]]) -> dict[str, float]:
        # rounded: a mean of exact zeros must not come out at -1e-17, below a bound at 0
        return {k: round(sum(r[k] for r in rows) / len(rows), 12) + 0.0 for k in ("WFS", "PS", "PSD", "abs_PS")}

    overall = mean([r for _, r in per])
    out: dict[str, float] = {"": overall["WFS"], **overall}
    for fld in dict.fromkeys([p.task_field, *p.by]):
        groups: dict[str, list[dict[str, float]]] = {}
        for sid, r in per:
            groups.setdefault(str(stimuli[sid].get(fld, "")), []).append(r)
        for g, rows in groups.items():
            out.update({f"{k}.{fld}.{g}": v for k, v in mean(rows).items()})
    return out


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    return {}  # every true value depends on the pairs and the samples: plan_truth


FORMAT = TFDPParams()
"""The tfdp format's own fields (s, s_prime, w_orig, w_prime_orig, task): what the data
says S, S' and their truths are, whatever the spec's parameters or slots say."""


def content(case: OracleCase) -> dict[str, Any] | None:
    """The target side (`content`) or the other (`content_anti`) planted by the record:
    the request's sentence is found by its text among the record's `s` and `s_prime`, and
    filled as the format defines the sides (a parity pair: S with its truth `w_orig`, S'
    with a stereotyped word; a factuality pair: both with the misinformation's word
    `w_prime_orig`). A spec whose slots or parameters put S' where S belongs reports the
    planted disparity reversed (runner/selftest_content.py)."""
    f = case.fields
    if FORMAT.sentence not in f or FORMAT.counter not in f:
        return None
    which = found_in(request_text(case.request), {"s": str(f[FORMAT.sentence]), "s_prime": str(f[FORMAT.counter])})
    if which is None:
        return None  # the request carries neither sentence of the record: nothing to plant
    word = fillers(FORMAT, f, case.kind == "content")[0 if which == "s" else 1]
    if case.request.kind == "next_token":
        return {"top": [[f" {word}", 0.0]]}
    return generated(word)


ORACLE = OracleDef(respond=respond, truth=truth, code=code, plan_truth=plan_truth, content=content,
                   content_source="each TFDP record's sentences s / s_prime (found by their text) and its words "
                                  "w_orig / w_prime_orig")
