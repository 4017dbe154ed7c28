"""Self-test oracles of pivotal-token perplexity (`biasaudit selftest`).

The oracle is a word-level language model: each segment of a prompt (frame text, each
sentence) is split at white space, one token per word, so every pivotal word is one
token and no token straddles a segment. Every token has log-prob HIGH, except the
pivotal tokens of the *surprised* prompt, which have log-prob LOW:

- `planted` (the effect the method assumes): the incorrect prompt is surprised, at its
  pivotal words only;
- `null` (no effect): the incorrect prompt for the stimuli of the target side (exactly
  half), the correct prompt for the others;
- `ties`: every token of both prompts has log-prob 0 (nothing tells the prompts apart).

True values, by hand from the definitions (docs/methods/pivotal_perplexity.md). In a prompt pair
with k pivotal tokens (k = the pivotal words of sentence a plus those of sentence b), the
aligned differences are d = +-D (D = e^-LOW - e^-HIGH) on the pivotal tokens and 0
elsewhere, so total = k D and every pivotal share is +-1/k; the pivotal tokens are a
minority of the prompt's tokens, so the median share is 0. Hence, per pair, with the
sign + where the incorrect prompt is the surprised one:

- pivotal.normalized = +-1/k - 0; pivotal.plain = kD / kD = 1;
- other.normalized = period.normalized = 0 - 0 = 0, and their plain proportions 0;
- pivotal_minus_other.normalized = +-1/k;
- accurate: the correct prompt has the lower sequence perplexity exactly when the
  incorrect one is the surprised one (its mean NLL is larger, the other's is -HIGH).

`planted`: accuracy 1 and pivotal.normalized = the mean of 1/k over stimuli (each gives
the same number of prompt pairs), 1/2 on data with one pivotal word per sentence, as in
both shipped specs; `null`: accuracy 1/2 and pivotal.normalized = (sum of 1/k over the
target side - sum over the rest) / n, 0 when k is the same for every stimulus.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from biasaudit.methods.oracle_kit import OracleCase, OracleDef, balanced_sides
from biasaudit.methods.pivotal_perplexity.metric import PivotalParams, listed_spans, word_diff_spans
from biasaudit.methods.pivotal_perplexity.segments import frame_segments

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared

HIGH, LOW = -1.0, -4.0
_WORD = re.compile(r"\S+")


def pivotal_spans(fields: Mapping[str, Any], p: PivotalParams) -> dict[str, list[tuple[int, int]]]:
    """The pivotal words' character spans in sentence a and sentence b (listed, or the
    word-level diff): the data's definition, as the metric reads it."""
    x, y = str(fields[p.a]), str(fields[p.b])
    if fields.get("pivotal_a") is not None or fields.get("pivotal_b") is not None:
        return {"a": listed_spans(x, list(fields.get("pivotal_a") or [])),
                "b": listed_spans(y, list(fields.get("pivotal_b") or []))}
    sa, sb = word_diff_spans(x, y)
    return {"a": sa, "b": sb}


def _overlaps(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(start < e and s < end for s, e in spans)


def pivotal_tokens(fields: Mapping[str, Any], p: PivotalParams) -> int:
    """k: the oracle's tokens (words) of sentences a and b that overlap a pivotal word."""
    spans = pivotal_spans(fields, p)
    return sum(_overlaps(m.start(), m.end(), spans[w]) for w, f in (("a", p.a), ("b", p.b))
               for m in _WORD.finditer(str(fields[f])))


def _scored(text: str, segs: list[tuple[str, int, int]], spans: Mapping[str, list[tuple[int, int]]],
            surprised: bool, flat: float | None) -> dict[str, Any]:
    tokens, ids, offsets = ["<s>"], [0], [[0, 0]]
    lps: list[float | None] = [None]
    for seg, start, end in segs:
        which = seg.split(":", 1)[1] if seg.startswith("sentence:") else None
        for m in _WORD.finditer(text, start, end):
            pivotal = which is not None and _overlaps(m.start() - start, m.end() - start, spans.get(which, []))
            tokens.append(m.group())
            ids.append(len(ids))
            lps.append(flat if flat is not None else LOW if surprised and pivotal else HIGH)
            offsets.append([m.start(), m.end()])
    return {"tokens": tokens, "token_ids": ids, "logprobs": lps, "offsets": offsets}


def respond(case: OracleCase) -> dict[str, Any] | None:
    p = case.params
    assert isinstance(p, PivotalParams)
    x, y = str(case.fields[p.a]), str(case.fields[p.b])
    v = case.vars
    correct = case.item.slot == p.correct
    text, segs = (frame_segments(v[p.clause_a], v[p.clause_b], v[p.order], x, y, "a", "b") if correct else
                  frame_segments(v[p.clause_a], v[p.clause_b], v[p.order], y, x, "b", "a"))
    if text != case.request.text:
        return None  # not a frame_prompt prompt: the metric leaves the pair out as unscorable
    surprised_incorrect = case.kind == "planted" or case.side
    return _scored(text, [(g.id, g.start, g.end) for g in segs], pivotal_spans(case.fields, p),
                   surprised=correct != surprised_incorrect, flat=0.0 if case.kind == "ties" else None)


def truth(kind: str, params: BaseModel) -> Mapping[str, float]:
    """The true values that do not depend on the data (those that do: `plan_truth`)."""
    if kind == "planted":
        return {"accuracy": 1.0, "accuracy.*": 1.0, "pivotal.plain": 1.0, "other.*": 0.0, "period.*": 0.0}
    if kind == "null":
        return {"accuracy": 0.5, "pivotal.plain": 1.0, "other.*": 0.0, "period.*": 0.0}
    return {}  # refuse and ties measure nothing


def plan_truth(kind: str, params: BaseModel, prep: Prepared) -> Mapping[str, float]:
    """pivotal.normalized and pivotal_minus_other.normalized: the mean over stimuli of
    +-1/k (see the module text)."""
    assert isinstance(params, PivotalParams)
    if kind not in ("planted", "null"):
        return {}
    fields = {s.id: s.fields for s in prep.stimuli.stimuli}
    sides = balanced_sides(list(fields), prep.composed.config.runtime.seed)
    signed = [(1.0 if kind == "planted" or sides[sid] else -1.0) / k
              for sid, f in fields.items() if (k := pivotal_tokens(f, params)) > 0]
    if not signed:
        return {}
    value = sum(signed) / len(signed)
    return {"": value, "pivotal.normalized": value, "pivotal_minus_other.normalized": value}


NEGATIVE = re.compile(r"\b(ungrammatical|not|incorrect|breaks|ill-formed|wrong|bad|invalid|unacceptable)\b", re.I)
"""Words by which a frame's clause says its sentence is NOT grammatical ("its
ungrammatical counterpart", "is not well-formed English", "breaks the rules"): the
content oracle reads the label each clause gives its sentence from the prompt's own
wording, not from which variable (`clause_a`) the spec put it in."""
FORMAT = PivotalParams()
"""The BLiMP format's fields: `a` is the record's `sentence_good`, `b` its `sentence_bad`
(data/adapters.py), whatever the spec's metric parameters name."""


def content(case: OracleCase) -> dict[str, Any] | None:
    """A model that knows grammar (`content`) or the reverse (`content_anti`): of the two
    prompts of a pair, the one whose wording calls the record's grammatical sentence
    (BLiMP `sentence_good`) grammatical and its ungrammatical one (`sentence_bad`)
    ungrammatical is unsurprising; the other is surprised at its pivotal words. Which
    clause says "grammatical" is read from the clause's words (NEGATIVE), so a spec that
    attaches the grammatical wording to the wrong sentence, or the prompts to the wrong
    slots, reports the accuracy reversed. None (unscorable) where the prompt is not a
    frame prompt of the record or the wording does not tell its clauses apart."""
    p = case.params
    assert isinstance(p, PivotalParams)
    v, f = case.vars, case.fields
    good, bad = str(f.get(FORMAT.a, "")), str(f.get(FORMAT.b, ""))
    ca, cb, order = str(v.get(p.clause_a, "")), str(v.get(p.clause_b, "")), str(v.get(p.order, ""))
    if not good or not bad or order not in ("ab", "ba"):
        return None
    for first, second, ids in ((good, bad, ("a", "b")), (bad, good, ("b", "a"))):
        text, segs = frame_segments(ca, cb, order, first, second, *ids)
        if text != case.request.text:
            continue
        good_clause, bad_clause = (ca, cb) if first == good else (cb, ca)
        good_says, bad_says = NEGATIVE.search(good_clause) is None, NEGATIVE.search(bad_clause) is None
        if good_says == bad_says:
            return None  # both clauses read alike: the wording does not say which is which
        labelled_right = good_says
        surprised = labelled_right != (case.kind == "content")
        return _scored(text, [(g.id, g.start, g.end) for g in segs], pivotal_spans(f, FORMAT), surprised=surprised,
                       flat=None)
    return None


def content_applies(prep: Prepared) -> str | None:
    """The content oracle reads BLiMP's good / bad sentences: other formats (the nonsense
    pairs, whose records do not say which sentence a clause should hold) have none."""
    fmt = prep.composed.config.stimuli.format
    return None if fmt == "blimp" else (f"no content oracle for stimuli.format {fmt!r}: only BLiMP records say "
                                         "which sentence is grammatical")


ORACLE = OracleDef(respond=respond, truth=truth, plan_truth=plan_truth, content=content,
                   content_applies=content_applies,
                   content_source="BLiMP's sentence_good / sentence_bad of each record and the wording of the "
                                  "clause each sits in")
