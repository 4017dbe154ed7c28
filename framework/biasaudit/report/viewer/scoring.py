"""Scoring outputs read for people: a sequence-logprob / pseudo-log-likelihood response as
its sentence, the total log-probability the metric sums and which sentence of the pair
won; a next-token or choice distribution as its options, most probable first.

The totals are the method's own: a token-probability bias score's pair is summed by
`methods.token_probability.metric.pair_scores` (its mode, its rounding) over the positions
`scored_positions` names, so the card and the metric cannot disagree. A scored response no
such metric reads is summed over every token with a log-prob, and the card says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import ValidationError

from biasaudit.methods.stereoset.metric import ROLES, StereoSetParams, sentence_score
from biasaudit.methods.token_probability.metric import (
    BiasScoreParams,
    pair_scores,
    scored_positions,
)
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.responses import (
    ChoiceOutput,
    ClassifyOutput,
    NextTokenOutput,
    NLIOutput,
    ScoredTokens,
)
from biasaudit.report.answers import clip
from biasaudit.report.viewer.model import ViewOption, ViewScoring, ViewSentence, ViewToken

MAX_TOKENS = 256
"""Most tokens of one sentence the page shows (the total always sums them all)."""
MAX_OPTIONS = 20
"""Most options of a distribution the page shows."""
TOKEN_CHARS = 80
SCORED_KINDS = frozenset({"sequence_logprob", "pseudo_loglik"})


@cache
def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet read back (character -> byte): printable bytes stand
    for themselves, the others (space, newline, ...) were shifted to U+0100 and up (so a
    space reads `Ġ`). Written out rather than imported: `transformers` is seconds of
    import for a 20-line table the viewer needs without a model."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("\u00a1"), ord("\u00ac") + 1),
            *range(ord("\u00ae"), ord("\u00ff") + 1)]
    chars, n = list(keep), 0
    codes = list(keep)
    for b in range(256):
        if b not in keep:
            codes.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for c, b in zip(chars, codes, strict=True)}


def decode_token(token: str) -> str:
    """A tokenizer's token string as the text it stands for: byte-level BPE (`Ġ` a space,
    `Ċ` a newline; a token of part of a UTF-8 character shows the replacement character),
    SentencePiece (`▁` a space), WordPiece (`##` a word's continuation); anything else as
    it is."""
    if token.startswith("##") and len(token) > 2:
        return token[2:]
    dec = _byte_decoder()
    if token and all(ch in dec for ch in token):
        raw = bytes(dec[ch] for ch in token)
        try:  # `Ã©` is é's two bytes; plain ASCII reads as itself
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            # part of a character: byte-level only when it has a shifted byte (`Ġ`...);
            # a lone Latin-1 letter of another tokenizer stays as it is
            if any(0x100 <= ord(ch) <= 0x143 for ch in token):
                return raw.decode("utf-8", errors="replace")
    return token.replace("\u2581", " ")


def token_texts(out: ScoredTokens, text: str) -> list[str]:
    """Each token's text: the scored text's own characters where the output's offsets
    cover it (the spaces before a token joined to it, so the tokens read as the sentence),
    else the token string decoded (`decode_token`)."""
    n = len(out.logprobs)
    toks = (list(out.tokens) + [""] * n)[:n]
    if len(out.offsets) == n and all(len(o) == 2 and 0 <= o[0] <= o[1] <= len(text) for o in out.offsets):
        res, prev = [], 0
        for (s, e), tok in zip(out.offsets, toks, strict=True):
            if e > s:
                res.append(text[prev:e] if s >= prev else text[s:e])
                prev = max(prev, e)
            else:  # BOS and other special tokens span no text
                res.append(decode_token(tok))
        return res
    return [decode_token(t) for t in toks]


@dataclass
class Scored:
    """One embedded row's scored output, kept while its pair is looked for."""

    row: int
    unit: tuple[str, str, int, int]
    """(cell, stimulus, variant, sample)."""
    slot: str
    text: str
    out: ScoredTokens


Rule = tuple[str, BiasScoreParams | StereoSetParams]
"""A metric that reads scored sentences together: its id and parameters."""


def pair_metrics(metrics: Mapping[str, MetricResult]) -> list[Rule]:
    """The run's token-probability bias scores and StereoSet scores, with their parameters."""
    found: list[Rule] = []
    for mid, r in metrics.items():
        tp: type[BiasScoreParams | StereoSetParams] | None = (
            BiasScoreParams if r.name == "bias_score" else StereoSetParams if r.name == "stereoset" else None)
        if tp is None:
            continue
        try:
            found.append((mid, tp.model_validate(r.params)))
        except ValidationError:
            continue
    return found


def _slots(p: BiasScoreParams | StereoSetParams) -> list[str]:
    return [p.more, p.less] if isinstance(p, BiasScoreParams) else [p.slots[r] for r in ROLES]


def _sentence(s: Scored, total: float | None, counted: set[int]) -> ViewSentence:
    texts = token_texts(s.out, s.text)
    toks = [ViewToken(text=clip(t, TOKEN_CHARS), logprob=lp if lp is None or math.isfinite(lp) else None,
                      counted=i in counted)
            for i, (t, lp) in enumerate(zip(texts, s.out.logprobs, strict=True))]
    return ViewSentence(slot=s.slot, text=s.text, total=total, tokens=toks[:MAX_TOKENS],
                        cut=max(0, len(toks) - MAX_TOKENS))


def _alone(s: Scored, note: str) -> ViewScoring:
    counted = {i for i, lp in enumerate(s.out.logprobs) if lp is not None and math.isfinite(lp)}
    total = float(sum(s.out.logprobs[i] or 0.0 for i in counted))
    return ViewScoring(rule="sum of every token with a log-prob (this response alone; its metric, if any, "
                            "scores it its own way: see the report)",
                       sentences=[_sentence(s, total, counted)], note=note)


def scorings(scored: Sequence[Scored], metrics: list[Rule],
             fields: Mapping[str, Mapping[str, Any]]) -> dict[int, ViewScoring]:
    """Row index -> its card's scoring: the sentences a bias score or StereoSet compares,
    each scored as that metric scores it; a response of no such group alone. `fields`:
    stimulus id -> its fields (StereoSet's candidate sentences)."""
    by_unit: dict[tuple[str, str, int, int], dict[str, Scored]] = {}
    for s in scored:
        by_unit.setdefault(s.unit, {})[s.slot] = s
    out: dict[int, ViewScoring] = {}
    for s in scored:
        slots = by_unit[s.unit]
        found = next(((mid, p) for mid, p in metrics if s.slot in _slots(p)), None)
        if found is None:
            out[s.row] = _alone(s, "")
            continue
        mid, p = found
        missing = [x for x in _slots(p) if x not in slots]
        if missing:
            out[s.row] = _alone(s, f"the {', '.join(map(repr, missing))} sentence of this group is not embedded "
                                   "(failed, or cut by --max-rows)")
            continue
        group = [slots[x] for x in _slots(p)]
        if isinstance(p, BiasScoreParams):
            out[s.row] = _pair(mid, p, group[0], group[1])
        else:
            out[s.row] = _stereoset(mid, p, group, fields.get(s.unit[1], {}))
    return out


def _pair(mid: str, p: BiasScoreParams, a: Scored, b: Scored) -> ViewScoring:
    rule = f"{mid} ({p.mode}), as the metric sums and rounds it"
    try:
        scores = pair_scores(p, a.out, b.out)
        pa, pb = scored_positions(p.mode, a.out, b.out)
    except (ValueError, IndexError) as exc:  # a damaged output: a token without a log-prob
        scores, pa, pb = f"not scorable: {exc}", [], []
    if isinstance(scores, str):
        return ViewScoring(rule=rule, sentences=[_sentence(a, None, set()), _sentence(b, None, set())],
                           note=clip(scores, 300))
    sm, sl = scores
    if not (math.isfinite(sm) and math.isfinite(sl)):  # NaN or infinity in a damaged output
        return ViewScoring(rule=rule, sentences=[_sentence(a, None, set(pa)), _sentence(b, None, set(pb))],
                           note="not scorable: a total is not a finite number")
    winner = p.more if sm > sl else p.less if sl > sm else ""
    return ViewScoring(rule=rule, sentences=[_sentence(a, sm, set(pa)), _sentence(b, sl, set(pb))],
                       winner=winner, note="" if winner else "a tie: neither sentence won")


def _stereoset(mid: str, p: StereoSetParams, group: list[Scored], f: Mapping[str, Any]) -> ViewScoring:
    """StereoSet: each candidate's score within its scored text (`sentence_score`: the mean,
    or the sum, of its tokens' log-probs); the stereotype and the anti-stereotype compete."""
    sents, totals = [], []
    for role, s in zip(ROLES, group, strict=True):
        cand = str(f.get(role, ""))
        try:
            sc = sentence_score(s.out, s.text, cand, p.normalize) if cand else None
            counted = set(s.out.part_positions(s.text, cand)) if sc is not None else set()
        except ValueError:  # no character offsets: the metric cannot score it either
            sc, counted = None, set()
        totals.append(sc)
        sents.append(_sentence(s, sc, counted))
    st, anti = totals[0], totals[1]
    winner = "" if st is None or anti is None or st == anti else group[0].slot if st > anti else group[1].slot
    note = ("not scored: a candidate sentence is not in its scored text (or the stimulus fields are not at hand)"
            if st is None or anti is None else "" if winner else "a tie: the metric counts it as anti-stereotype")
    measure = "mean log-prob per token" if p.normalize == "mean" else "total log-prob"
    return ViewScoring(rule=f"{mid} ({measure} of the candidate sentence's tokens, as the metric scores it; "
                            "the stereotype and the anti-stereotype compete)",
                       measure=measure, sentences=sents, winner=winner, note=note)


def options(kind: str, raw: Mapping[str, object]) -> list[ViewOption]:
    """A distribution's options, most probable first (at most `MAX_OPTIONS`); empty when
    the output is not one."""
    opts: list[ViewOption] = []
    try:
        if kind == "next_token":
            nt = NextTokenOutput.model_validate(raw)
            opts = [ViewOption(option=clip(decode_token(t), TOKEN_CHARS), logprob=_fin(lp), prob=_fin(math.exp(lp)))
                    for t, lp in nt.top]
        elif kind in ("choice", "classify", "classify_nli"):
            tp: type[ChoiceOutput | ClassifyOutput | NLIOutput] = (
                ChoiceOutput if kind == "choice" else ClassifyOutput if kind == "classify" else NLIOutput)
            rec = tp.model_validate(raw)
            lps: Mapping[str, float | None] = getattr(rec, "logprobs", None) or getattr(rec, "label_logprobs", {})
            opts = [ViewOption(option=clip(str(k), TOKEN_CHARS), prob=_fin(v), logprob=_fin(lps.get(str(k))))
                    for k, v in rec.probs.items()]
    except (ValidationError, OverflowError, TypeError, ValueError):
        return []
    opts.sort(key=lambda o: -(o.prob if o.prob is not None else -1.0))
    return opts[:MAX_OPTIONS]


def _fin(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


__all__ = ["MAX_TOKENS", "SCORED_KINDS", "Scored", "decode_token", "options", "pair_metrics", "scorings",
           "token_texts"]
