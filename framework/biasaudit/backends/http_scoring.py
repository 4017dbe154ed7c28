"""Scoring a text over an OpenAI-compatible server exactly as the in-process backend does.

In-process, a scored text is `[BOS] + system-prompt prefix + text`: every word of the text,
the first included, is conditioned on the BOS token (and on a variant's standing system
prompt), and only the text's own tokens are scored. A server scores what it is sent, in
its own way, and the two real engines differ:

- vLLM adds a BOS only where the tokenizer says so (SmolLM2's does not), so the first word
  went unscored and every later one was conditioned differently: up to 22.8 nats apart
  per sentence, CrowS-Pairs 70 in-process against 60 over HTTP.
- llama-cpp-python's echo hides the BOS it was sent, nulls the first token it reports
  (the OpenAI convention) and, without a BOS, pairs each token with the wrong position's
  log-probs. It also reads `max_tokens: 0` as "until the context is full".

So the BOS is sent as text where the server does not add one (servers read special-token
text as the token), the system prompt after it, `max_tokens` is 1 and the generated token
dropped, the reported tokens are matched against the text sent (not the servers'
offsets, which do not agree on what they count), and a first word left without a
log-prob is read from the server's next-token distribution after the same conditioning.
Each output says which conditioning was used (`conditioning`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from biasaudit.backends.openai_parse import OutputFault
from biasaudit.records.json import JSONObject


@dataclass
class Conditioning:
    """What comes before a scored text, decided once per backend by a probe."""

    bos_sent: str
    """Text put before every scored text ("" when the server adds its own BOS)."""
    bos_label: str
    """The BOS token's text, shown as the output's first token."""
    prefix: str
    """A variant's system prompt and a newline: context, never scored."""
    convention: str
    """For the report: how the first word was conditioned."""
    first_token_lps: dict[str, dict[str, float]] = field(default_factory=dict)
    """Next-token log-probs after `bos_sent + prefix` (asked once), by token text."""

    def sent(self, text: str) -> str:
        return self.bos_sent + self.prefix + text

    @property
    def start(self) -> int:
        """Where the scored text begins in what was sent."""
        return len(self.bos_sent) + len(self.prefix)


@dataclass
class Token:
    text: str
    start: int
    end: int
    logprob: float | None
    special: bool = False
    index: int | None = None
    """Position in the server's arrays (None: a BOS the server hid)."""


# An undecodable piece (part of a multi-byte character) is matched by where the next
# token starts, at most this many characters on.
_MAX_PIECE_CHARS = 8


def align(tokens: list[Any], logprobs: list[Any], sent: str, bos_sent: str) -> list[Token]:
    """Each reported token's span in `sent`, in order, by matching its text; tokens
    generated after the prompt are dropped. A server that adds its own BOS and shows it
    gets a zero-width special token; one that hides the BOS it was sent starts matching
    after it."""
    out: list[Token] = []
    cur = 0
    n = len(tokens)
    for i in range(n):
        if cur >= len(sent):
            break  # the rest was generated
        t = tokens[i] if isinstance(tokens[i], str) else ""
        lp = logprobs[i]
        if t and sent.startswith(t, cur):
            out.append(Token(t, cur, cur + len(t), lp, index=i))
            cur += len(t)
            continue
        gap = len(sent[cur:]) - len(sent[cur:].lstrip())
        if t and gap and sent.startswith(t, cur + gap):
            # a server that reports words without the whitespace before them
            cur += gap
            out.append(Token(t, cur, cur + len(t), lp, index=i))
            cur += len(t)
            continue
        if i == 0 and bos_sent and t and sent.startswith(t, len(bos_sent)):
            # the BOS we sent, parsed as the special token and left out of the echo
            cur = len(bos_sent)
            out.append(Token(bos_sent, 0, cur, None, special=True))
            out.append(Token(t, cur, cur + len(t), lp, index=i))
            cur += len(t)
            continue
        if i == 0 and lp is None:
            out.append(Token(t, 0, 0, None, special=True, index=i))  # a BOS the server added and shows
            continue
        if not t:  # a piece that decodes to nothing on its own: no characters of its own
            out.append(Token(t, cur, cur, lp, index=i))
            continue
        nxt = tokens[i + 1] if i + 1 < n and isinstance(tokens[i + 1], str) else ""
        j = sent.find(nxt, cur + 1) if nxt else len(sent)
        if "\ufffd" not in t or j < 0 or j - cur > _MAX_PIECE_CHARS:
            raise OutputFault("bad_logprobs", f"the server's token {t[:20]!r} is not at character {cur} of the "
                                              "text sent (cannot align its log-probs with the text)")
        out.append(Token(t, cur, j, lp, index=i))
        cur = j
    if cur < len(sent):
        raise OutputFault("bad_logprobs", f"the server's tokens cover {cur} of the {len(sent)} characters sent")
    return out


def text_tokens(aligned: list[Token], cond: Conditioning) -> list[Token]:
    """The tokens of the scored text, spans relative to it; refuses a token that straddles
    the conditioning and the text (the two would not be tokenized as in-process)."""
    b = cond.start
    out = []
    for tok in aligned:
        if tok.start < b < tok.end:
            raise OutputFault("bad_logprobs", f"the server's token {tok.text[:20]!r} spans the system prompt and the "
                                              "scored text")
        if tok.start >= b and not tok.special:
            out.append(Token(tok.text, tok.start - b, tok.end - b, tok.logprob, index=tok.index))
    return out


def first_logprob(dist: dict[str, float], token: str) -> float:
    """log p(first token | conditioning) from a next-token distribution keyed by text."""
    if not token or "\ufffd" in token or token not in dist:
        raise OutputFault("bad_logprobs", f"the server gives no log-prob for the first token {token[:20]!r} (it "
                                          "leaves the first echoed token unscored and its next-token log-probs after "
                                          "the BOS do not list it)")
    return float(dist[token])


def output(cond: Conditioning, toks: list[Token], ids: list[int] | None, bos_id: int | None) -> JSONObject:
    """The in-process output shape: BOS first (no log-prob), then the text's tokens."""
    if any(t.logprob is None for t in toks):
        raise OutputFault("bad_logprobs", "a token of the scored text has no log-prob")
    out: dict[str, Any] = {
        "tokens": [cond.bos_label, *(t.text for t in toks)],
        "token_ids": [bos_id if bos_id is not None else -1, *ids] if ids is not None else [],
        "logprobs": [None, *(t.logprob for t in toks)],
        "offsets": [[0, 0], *([t.start, t.end] for t in toks)],
        "conditioning": cond.convention,
    }
    return out
