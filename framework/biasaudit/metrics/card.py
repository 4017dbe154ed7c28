"""A scoring probe's response read for people: the hook a metric registers to show, in
`biasaudit view`, the sentences it compares with the scores it gives them and which one
won, and the generic card of a scored response no such metric reads.

A metric that compares scored sentences (a minimal pair, a set of candidates) registers a
`CardDef` on its `MetricDef` (`card=`): which probe slots one card holds and how the
card's scores are computed, with the metric's own functions, so the page and the metric
cannot disagree. The viewer (report/viewer/scoring.py) groups the embedded responses by
unit, asks each metric of the run for its card, and falls back to `alone` (every token
with a log-prob summed, said so) for a response no card reads.

The records here are what the page embeds (`ViewRow.scoring`); they sit beside the hook,
not in the viewer, because the method packages that build them come before `report/`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.records.responses import ScoredTokens

MAX_TOKENS = 256
"""Most tokens of one sentence the page shows (the total always sums them all)."""
TOKEN_CHARS = 80
"""Most characters of one token's text (a token is rarely longer; a damaged one may be)."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ViewToken(_Record):
    """One scored token, decoded to the text it stands for."""

    text: str
    """As read (byte-level BPE and SentencePiece space markers shown as spaces)."""
    logprob: float | None = None
    counted: bool = False
    """Whether the total sums it (the metric's rule)."""


class ViewSentence(_Record):
    """One sentence (probe slot) of a scoring probe, with its total log-probability."""

    slot: str
    text: str = ""
    total: float | None = None
    """None: not scored (failed, or the group could not be scored: `ViewScoring.note`)."""
    tokens: list[ViewToken] = Field(default_factory=list)
    cut: int = 0
    """Tokens left out of `tokens` (the page shows at most `MAX_TOKENS`)."""


class ViewScoring(_Record):
    """A sequence-logprob / pseudo-log-likelihood response read as sentences and totals."""

    rule: str
    """How the totals are summed, in words (the metric and its mode, or "every token with a log-prob")."""
    measure: str = "total log-prob"
    """What `ViewSentence.total` is (e.g. a mean log-prob per token where the metric averages)."""
    sentences: list[ViewSentence] = Field(default_factory=list)
    """The group's sentences in the metric's order (one when the response is in no scored group)."""
    winner: str = ""
    """The slot with the higher score; empty when one sentence, a tie or not scored."""
    note: str = ""


@dataclass(frozen=True)
class ScoredText:
    """One scored response of a card: its probe slot, the text scored and the output."""

    slot: str
    text: str
    out: ScoredTokens


Fields = Mapping[str, object]
"""The stimulus's fields (a metric may read its candidate sentences there)."""


@dataclass(frozen=True)
class CardDef:
    """How a metric shows the scored sentences it compares (`MetricDef.card`)."""

    slots: Callable[[BaseModel], Sequence[str]]
    """The probe slots one card holds, in the order shown, from the metric's parameters."""
    build: Callable[[str, BaseModel, Sequence[ScoredText], Fields], ViewScoring]
    """(metric id, parameters, the responses of `slots` in that order, the stimulus's
    fields) -> the card, each sentence scored as the metric scores it."""


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying so (report.answers.clip's form: that
    module comes after this one in the layer order)."""
    return text if len(text) <= limit else f"{text[:limit]} [... {len(text) - limit} more characters cut]"


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


def sentence(s: ScoredText, total: float | None, counted: set[int]) -> ViewSentence:
    """One sentence of a card: its text, its total (None: not scored), its tokens decoded,
    each marked whether the total sums it."""
    texts = token_texts(s.out, s.text)
    toks = [ViewToken(text=clip(t, TOKEN_CHARS), logprob=lp if lp is None or math.isfinite(lp) else None,
                      counted=i in counted)
            for i, (t, lp) in enumerate(zip(texts, s.out.logprobs, strict=True))]
    return ViewSentence(slot=s.slot, text=s.text, total=total, tokens=toks[:MAX_TOKENS],
                        cut=max(0, len(toks) - MAX_TOKENS))


def alone(s: ScoredText, note: str) -> ViewScoring:
    """The generic card: the response's own sum over every token with a finite log-prob
    (no metric of the run compares it with another sentence, or its group is not at hand)."""
    counted = {i for i, lp in enumerate(s.out.logprobs) if lp is not None and math.isfinite(lp)}
    total = float(sum(s.out.logprobs[i] or 0.0 for i in counted))
    return ViewScoring(rule="sum of every token with a log-prob (this response alone; its metric, if any, "
                            "scores it its own way: see the report)",
                       sentences=[sentence(s, total, counted)], note=note)


__all__ = ["MAX_TOKENS", "CardDef", "Fields", "ScoredText", "ViewScoring", "ViewSentence", "ViewToken", "alone",
           "clip", "decode_token", "sentence", "token_texts"]
