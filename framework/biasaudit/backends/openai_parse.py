"""Reading OpenAI-compatible response bodies into biasaudit outputs.

Every way a body can be unusable raises `OutputFault` with a failure kind, so the store
records why a request failed (`malformed`, `empty`, `content_filter`, `bad_logprobs`),
not just that it did. A model's own refusal (`message.refusal`) is an answer, not a
fault: the refusal text is the response and the coders see it.
"""

from __future__ import annotations

import math
from typing import Any

from biasaudit.records.json import JSONObject


class OutputFault(Exception):
    """The server answered, but the body cannot be used."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def _first_choice(data: dict[str, Any]) -> dict[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise OutputFault("malformed", "response has no `choices`")
    return choices[0]


def _completion_tokens(usage: dict[str, Any], text: str) -> int:
    """The server's count of generated tokens, or the text's words where it gives none
    (absent or null: `usage_tokens` has already refused any other non-count)."""
    n = usage.get("completion_tokens")
    return n if isinstance(n, int) else len(text.split())


def parse_chat(data: dict[str, Any]) -> JSONObject:
    choice = _first_choice(data)
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        raise OutputFault("content_filter", "blocked by the server's content filter")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise OutputFault("malformed", "choice has no `message`")
    text = message.get("content")
    refusal = message.get("refusal")
    usage_tokens(data)  # refuses an unusable `usage` before its counts are read
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
    if not text and isinstance(refusal, str) and refusal.strip():
        return {"text": refusal, "finish_reason": finish, "refusal": True,
                "output_tokens": _completion_tokens(usage, refusal)}
    if text is not None and not isinstance(text, str):
        raise OutputFault("malformed", f"message content is a {type(text).__name__}, not text")
    if text is None or not text.strip():
        raise OutputFault("empty", f"empty content (finish_reason {finish})")
    return {"text": text, "finish_reason": finish,
            "output_tokens": _completion_tokens(usage, text)}


def parse_top_logprobs(data: dict[str, Any]) -> dict[str, Any]:
    choice = _first_choice(data)
    lp = choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        raise OutputFault("bad_logprobs", "no token log-probs returned (does the server support `logprobs`?)")
    top = content[0].get("top_logprobs")
    if not isinstance(top, list) or not top:
        raise OutputFault("bad_logprobs", "no top log-probs for the first token")
    out = []
    for t in top:
        tok, val = (t.get("token"), t.get("logprob")) if isinstance(t, dict) else (None, None)
        if not isinstance(tok, str) or not _is_logprob(val):
            raise OutputFault("bad_logprobs", f"top log-prob entry is not (token, logprob <= 0): {str(t)[:80]}")
        out.append([tok, float(val)])  # type: ignore[arg-type]
    return {"top": out}


def parse_choice(data: dict[str, Any], words: list[str]) -> dict[str, Any]:
    """Multiple choice from the first token's top log-probs: each answer word takes the
    best log-prob of a returned token that starts it; words not returned are absent."""
    top = parse_top_logprobs(data)["top"]
    lps: dict[str, float] = {}
    for tok, lp in top:
        t = tok.strip().lower()
        for w in words:
            if t and w.lower().startswith(t) and lp > lps.get(w, -math.inf):
                lps[w] = lp
    if not lps:
        raise OutputFault("malformed", "none of the answer words is among the returned top log-probs")
    best = max(lps.values())
    z = sum(math.exp(v - best) for v in lps.values())
    probs = {w: math.exp(lps[w] - best) / z if w in lps else 0.0 for w in words}
    return {"probs": probs, "logprobs": lps, "choice": max(probs, key=lambda w: probs[w])}


def _prompt_entry(i: int, entry: Any, ids: Any) -> tuple[Any, Any]:
    """(decoded token, log-prob) of the prompt's own token at position i."""
    if not isinstance(entry, dict) or not entry:
        raise OutputFault("bad_logprobs", f"prompt_logprobs[{i}] is not a mapping of token ids")
    key = str(ids[i]) if isinstance(ids, list) and i < len(ids) and str(ids[i]) in entry else next(iter(entry))
    e = entry[key]
    if not isinstance(e, dict):
        raise OutputFault("bad_logprobs", f"prompt_logprobs[{i}] entry is not {{logprob, rank, decoded_token}}")
    return (e.get("decoded_token") if isinstance(e.get("decoded_token"), str) else ""), e.get("logprob")


def _add_prompt_ids(out: dict[str, Any], plp: list[Any], ids: Any, n: int) -> None:
    """`ids`: the server's `prompt_token_ids`, else the ids named by each entry's key."""
    if isinstance(ids, list) and len(ids) == n and all(isinstance(x, int) for x in ids):
        out["ids"] = list(ids)
    else:  # the ids named by each entry's key
        keys = [next(iter(e)) if isinstance(e, dict) and e else None for e in plp]
        if all(k is not None and str(k).isdigit() for k in keys[1:]):
            out["ids"] = [-1, *[int(str(k)) for k in keys[1:]]] if keys and keys[0] is None else None


def _from_prompt_logprobs(choice: dict[str, Any]) -> dict[str, Any] | None:
    """vLLM's `prompt_logprobs` (a list, None first, then per position {token id: {logprob,
    rank, decoded_token}}) as echo-style arrays, offsets running over the decoded tokens as
    vLLM computes them. The prompt's own token is the entry named in `prompt_token_ids`
    when the server returns them, else the first entry (vLLM lists it first)."""
    plp = choice.get("prompt_logprobs")
    if not isinstance(plp, list) or not plp:
        return None
    ids = choice.get("prompt_token_ids")
    tokens: list[Any] = []
    lps: list[Any] = []
    for i, entry in enumerate(plp):
        if entry is None:
            tokens.append("")
            lps.append(None)
            continue
        token, lp = _prompt_entry(i, entry, ids)
        tokens.append(token)
        lps.append(lp)
    offs, pos = [], 0
    for t in tokens:
        offs.append(pos)
        pos += len(t)
    out: dict[str, Any] = {"tokens": tokens, "token_logprobs": lps, "text_offset": offs}
    _add_prompt_ids(out, plp, ids, len(tokens))
    return out


def _without_special_start(tokens: list[Any], lps: list[Any], offs: list[Any], text: str) -> list[Any]:
    """vLLM counts offsets over the decoded tokens, special ones included: an unscored
    first token that is not the text's start (a BOS such as `<s>`) shifts every later
    offset by its length. Such offsets are moved back, the BOS given the span [0, 0]."""
    first = tokens[0] if isinstance(tokens[0], str) else ""
    if (lps[0] is None and first and not text.startswith(first) and len(offs) > 1
            and all(isinstance(o, int) for o in offs) and offs[0] == 0 and offs[1] == len(first)):
        return [0, *[o - len(first) for o in offs[1:]]]
    return offs


def parse_echo(data: dict[str, Any], text: str) -> JSONObject:
    """Prompt log-probs from a legacy completion with `echo`: one token, log-prob and
    character offset each, offsets rising within the text (the first log-prob is None).
    Reads OpenAI's shape, vLLM's (offsets shifted by a BOS token), and vLLM's
    `prompt_logprobs` when the echo arrays are absent."""
    choice = _first_choice(data)
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        lp = _from_prompt_logprobs(choice)
    if not isinstance(lp, dict):
        raise OutputFault("bad_logprobs", "no `logprobs` in the completion (does the server support echo?)")
    tokens, lps, offs = lp.get("tokens"), lp.get("token_logprobs"), lp.get("text_offset")
    if not (isinstance(tokens, list) and isinstance(lps, list) and isinstance(offs, list)) or not tokens:
        raise OutputFault("bad_logprobs", "echo log-probs lack tokens, token_logprobs or text_offset")
    if not (len(tokens) == len(lps) == len(offs)):
        raise OutputFault("bad_logprobs", f"logprob arrays differ in length: {len(tokens)} tokens, "
                                          f"{len(lps)} log-probs, {len(offs)} offsets")
    offs = _without_special_start(tokens, lps, offs, text)
    if any(not isinstance(o, int) or not 0 <= o <= len(text) for o in offs) or offs != sorted(offs):
        raise OutputFault("bad_logprobs", "token offsets are not rising positions within the text")
    if any(v is not None and not _is_logprob(v) for v in lps[1:]):
        raise OutputFault("bad_logprobs", "a token log-prob is missing or not a number <= 0")
    ends = [*offs[1:], len(text)]
    # no token ids: positions are not ids, and `ar_shared` compares ids (it refuses an
    # output without them rather than align positions)
    return {"tokens": tokens, "token_ids": [],
            "logprobs": lps, "offsets": [[s, e] for s, e in zip(offs, ends, strict=True)]}


def echo_arrays(data: dict[str, Any]) -> tuple[list[Any], list[Any], list[int] | None]:
    """The echoed tokens, their log-probs and, where the server gives them (vLLM's
    `prompt_logprobs`), their ids, checked for shape; what they mean is read by
    `http_scoring.align` against the text sent."""
    choice = _first_choice(data)
    lp = choice.get("logprobs")
    ids: list[int] | None = None
    plp = _from_prompt_logprobs(choice)
    if plp is not None:
        ids = plp.pop("ids", None)
    if not isinstance(lp, dict):
        lp = plp
    if not isinstance(lp, dict):
        raise OutputFault("bad_logprobs", "no `logprobs` in the completion (does the server support echo?)")
    tokens, lps = lp.get("tokens"), lp.get("token_logprobs")
    if not (isinstance(tokens, list) and isinstance(lps, list)) or not tokens:
        raise OutputFault("bad_logprobs", "echo log-probs lack tokens or token_logprobs")
    if len(tokens) != len(lps):
        raise OutputFault("bad_logprobs", f"logprob arrays differ in length: {len(tokens)} tokens, "
                                          f"{len(lps)} log-probs")
    if any(v is not None and not _is_logprob(v) for v in lps):
        raise OutputFault("bad_logprobs", "a token log-prob is not a number <= 0")
    if ids is not None and len(ids) > len(tokens):
        ids = None  # the echo and prompt_logprobs disagree on the tokens: no ids rather than wrong ones
    return tokens, lps, ids


def next_token_dist(data: dict[str, Any]) -> dict[str, float]:
    """A legacy completion's log-probs for its first generated token, by token text."""
    choice = _first_choice(data)
    lp = choice.get("logprobs")
    top = lp.get("top_logprobs") if isinstance(lp, dict) else None
    first = top[0] if isinstance(top, list) and top else None
    if not isinstance(first, dict):
        raise OutputFault("bad_logprobs", "no top log-probs for the next token")
    return {str(k): float(v) for k, v in first.items() if _is_logprob(v)}


MAX_USAGE = 10**9
"""Token counts above this are not counts (a server bug or a hostile body)."""


def usage_tokens(data: dict[str, Any]) -> int | None:
    """Tokens the server says the call used (prompt + completion), when it says. A
    `usage` that is not a mapping of whole, non-negative counts is a malformed answer:
    it would corrupt the rate limiter and the throughput record."""
    usage = data.get("usage")
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise OutputFault("malformed", f"`usage` is a {type(usage).__name__}, not a mapping")
    counts = {}
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        v = usage.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_USAGE:
            raise OutputFault("malformed", f"`usage.{k}` is not a token count: {str(v)[:40]}")
        counts[k] = v
    if "total_tokens" in counts:
        return counts["total_tokens"]
    if "prompt_tokens" in counts and "completion_tokens" in counts:
        return counts["prompt_tokens"] + counts["completion_tokens"]
    return None


def reported_usage(data: dict[str, Any]) -> JSONObject | None:
    """The answer's token counts as the provider reported them, for the run's tally and
    cost (`records.responses.Usage`): both `prompt_tokens` and `completion_tokens`, or
    nothing (a server that reports one, or none, leaves the plan's estimate to stand in).
    Call after `usage_tokens`, which refuses counts that are not counts."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(p, int) or not isinstance(c, int) or isinstance(p, bool) or isinstance(c, bool):
        return None
    total = usage.get("total_tokens")
    if isinstance(total, int) and not isinstance(total, bool) and total > p + c:
        # Gemini's OpenAI-compatible endpoint counts a thinking model's thoughts in
        # `total_tokens` only; they are billed as output, so they are counted as output
        c = total - p
    return {"input_tokens": p, "output_tokens": c}


def _is_logprob(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v <= 1e-6  # servers round -0.0 up a hair
