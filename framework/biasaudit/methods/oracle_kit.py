"""What a method gives `biasaudit selftest`: oracle responders built from the spec's own
data, and the true value of its estimates under each of them.

An oracle stands in for the model. It answers every request of the plan as a model with
a known property would:

- `planted`: always takes the stereotyped (target) side;
- `null`: takes each side for exactly half of the stimuli (a seeded, balanced
  assignment), so the true bias is nil;
- `refuse`: refuses every generation (scoring requests fail): nothing is measured;
- `ties`: gives every alternative the same score, or one constant answer to everything.

Each method says how its requests are answered (`respond`), what its estimates truly are
under `planted` and `null` (`truth`), and, where its coding layers ask a model (judges,
a choice question), how a perfect judge would answer (`code`). The self-test runs the
real coding, metrics, guards and thresholds on those answers (selftest.py).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from biasaudit.coding.base import CodingRequest
from biasaudit.plan import PlanItem, Request

if TYPE_CHECKING:
    from biasaudit.runner.pipeline import Prepared

KINDS = ("planted", "null", "refuse", "ties")
REFUSAL_TEXT = "I'm sorry, I cannot answer that."


@dataclass(frozen=True)
class OracleCase:
    """One plan item, as the oracle sees it."""

    kind: str
    item: PlanItem
    request: Request
    fields: Mapping[str, Any]
    """The stimulus's fields."""
    vars: Mapping[str, Any]
    """The cell's level variables (e.g. BBQ's option order `perm`)."""
    params: BaseModel
    """The parameters of the spec's (first) metric of this method."""
    side: bool
    """`null`: this stimulus's side in the balanced assignment (True: the target side)."""
    stimuli: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Every stimulus's fields (id -> fields), for an oracle whose answer depends on the
    other stimuli (e.g. which category of a field it disfavours)."""
    planted: frozenset[str] = frozenset()
    """`gap`: the texts naming the levels the gap is planted on (found in the request's
    text, never read from the cell's group variable)."""


@dataclass(frozen=True)
class OracleDef:
    respond: Callable[[OracleCase], dict[str, Any] | None]
    """The output of one request (None: the request fails). `refuse` never reaches it."""
    truth: Callable[[str, BaseModel], Mapping[str, float]]
    """(kind, params) -> estimate name (fnmatch pattern; "" the headline) -> true value,
    for `planted` and `null`; for `refuse` and `ties` only where they truly measure
    something (a refusal rate), else nothing (INCONCLUSIVE expected)."""
    code: Callable[[str, CodingRequest, Mapping[str, str]], dict[str, Any] | None] | None = None
    """(kind, coding request, response text -> intended label) -> the answer of a perfect
    judge (None: it cannot answer this request)."""
    kinds: tuple[str, ...] = KINDS
    notes: tuple[str, ...] = field(default=())
    plan_truth: Callable[[str, BaseModel, Prepared], Mapping[str, float]] | None = None
    """As `truth`, for true values that depend on the design too (e.g. the share of units
    of tasks a coding layer does not apply to): (kind, params, the prepared spec) ->
    estimate name pattern -> true value, consulted before `truth`."""
    content: Callable[[OracleCase], dict[str, Any] | None] | None = None
    """A responder that plants the bias by the data's own content, not by the spec's slot
    names: it reads the request's text and the stimulus's record (which sentence is the
    stereotyping one, which answer names the stereotyped group) and prefers the
    stereotyping side (kind `content`) or the other side (kind `content_anti`). A spec
    whose slots, or slot parameters, are swapped then reports the planted bias on the
    wrong side of its no-bias value (runner/selftest_content.py). Its true values are
    `planted`'s."""
    content_applies: Callable[[Prepared], str | None] | None = None
    """Whether the content oracle can read this spec's data: None where it can, else the
    reason it cannot (a note; no content rows). None (the field): it always can."""
    content_source: str = ""
    """Which fields of a record say which side stereotypes (named in the self-test's
    message), e.g. "sent_more of each CrowS-Pairs pair"."""
    meaning: Callable[[str], str | None] | None = None
    """What an answer of this oracle means, by its content (`refuse`, `endorse`,
    `select`...; None: nothing the self-test checks)."""
    counts: Callable[[str, str, BaseModel], str | None] | None = None
    """(metric name, metric id, its parameters) -> the meaning of the answers the metric
    counts (None: cannot tell): with `meaning`, catches a rate counting the wrong label."""
    checks: Callable[[Prepared, BaseModel], tuple[list[str], list[str]]] | None = None
    """Checks of the spec's design against content it does not control (e.g. a name's
    group in a published name list): (problems, notes), one line each."""
    groups: Callable[[Prepared, BaseModel], GroupDesign | None] | None = None
    """The spec's factor levels grouped by a level variable, each with the text that
    names it in a prompt and its group by content the spec does not control (None where
    the spec has no such grouping): the permutation row (runner/selftest_groups.py)."""
    gap: Callable[[OracleCase], dict[str, Any] | None] | None = None
    """A responder for the permutation row (kind `gap`): the method's biased answer to a
    request whose text names one of `OracleCase.planted`, its unbiased one otherwise."""
    strata: Callable[[Mapping[str, Any]], tuple[str, ...]] | None = None
    """The `null` assignment balanced within strata of the stimuli (a stimulus's fields
    -> its stratum, e.g. BBQ's context condition and category, StereoSet's target term),
    by `stratified_sides`, for a score that is a mean over groups or taken per group;
    None: `balanced_sides` over all stimuli."""


@dataclass(frozen=True)
class GroupLevel:
    """One factor level of a grouping, as the permutation row sees it."""

    factor: str
    level: str
    group: str
    """The spec's group label for the level (its group variable)."""
    text: str
    """The words that name the level in a prompt (e.g. the name "Sarah")."""
    content: str | None
    """The spec's group label that the level's text belongs to by the method's content
    source (a published name list, the meaning of a word); None: the source does not say."""


@dataclass(frozen=True)
class GroupDesign:
    """A spec's grouping of factor levels, for the permutation row."""

    var: str
    """The level variable holding the group label (e.g. `group`), or with `field` the
    stimulus field (e.g. `gender`; its levels are then the field's values, factor
    `stimuli`)."""
    levels: tuple[GroupLevel, ...]
    source: str
    """What gives `GroupLevel.content`, named in the row's messages."""
    truth: Callable[[Mapping[tuple[str, str], str], frozenset[tuple[str, str]]], Mapping[str, float]]
    """(each (factor, level) -> its group, the levels the gap is planted on) -> estimate
    name (fnmatch pattern; "" the headline) -> its true value under the `gap` oracle."""
    field: bool = False
    """`var` is a stimulus field, not a level variable."""


CONTENT_KINDS = ("content", "content_anti")
"""The content oracle's kinds: the stereotyping side by the record, and the other side."""


def request_text(request: Request) -> str:
    """All the text a request sends: the scored text, the NLI pair, or the chat messages."""
    parts = [request.text or "", request.text_pair or ""]
    parts += [m.get("content", "") for m in request.messages or []]
    return "\n".join(p for p in parts if p)


def found_in(text: str, candidates: Mapping[str, str]) -> str | None:
    """The key of the longest candidate text found in `text` (None: none is): which of a
    record's sentences a request carries, whatever template or slot name put it there."""
    hits = [(len(v), k) for k, v in candidates.items() if v and v in text]
    return max(hits)[1] if hits else None


def balanced_sides(stimuli: list[str], seed: int = 0) -> dict[str, bool]:
    """Exactly half of the stimuli (rounded down) on the target side, chosen by a seeded
    order of their ids: the `null` oracle's assignment."""
    order = sorted(stimuli, key=lambda s: hashlib.sha256(f"{seed}:{s}".encode()).hexdigest())
    half = len(order) // 2
    return {s: i < half for i, s in enumerate(order)}


def stratified_sides(stimuli: Mapping[str, Mapping[str, Any]], strata: Callable[[Mapping[str, Any]], tuple[str, ...]],
                     seed: int = 0) -> dict[str, bool]:
    """`balanced_sides` within strata: the stimuli (id -> fields) sorted by stratum, then by
    the seeded order of their ids, and the sides alternated along that order (False
    first). Every stratum, and every run of consecutive strata (a stratum's leading key
    parts), is then balanced to one stimulus, and the odd ones out of successive odd-sized
    strata fall on alternate sides; exactly half of all stimuli (rounded down) are on
    the target side."""
    order = sorted(stimuli, key=lambda s: (strata(stimuli[s]), hashlib.sha256(f"{seed}:{s}".encode()).hexdigest()))
    return {s: i % 2 == 1 for i, s in enumerate(order)}


def word_id(word: str) -> int:
    """A token id that depends on the word only (shared-token alignment compares ids)."""
    return zlib.crc32(word.encode("utf-8")) & 0x7FFFFFFF


def scored_tokens(text: str, per_token: float, *, special_end: bool = False) -> dict[str, Any]:
    """A `sequence_logprob` / `pseudo_loglik` output for `text` split at white space, every
    word with log-prob `per_token`; BOS first (no log-prob), and an end token for a
    masked LM (`special_end`, skipped by the scorers)."""
    words = text.split()
    offsets: list[list[int]] = [[0, 0]]
    pos = 0
    for w in words:
        start = text.index(w, pos)
        offsets.append([start, start + len(w)])
        pos = start + len(w)
    tokens = ["<s>", *words]
    ids = [0, *[word_id(w) for w in words]]
    lps: list[float | None] = [None, *[per_token] * len(words)]
    if special_end:
        tokens.append("</s>")
        ids.append(1)
        lps.append(per_token)
        offsets.append([len(text), len(text)])
    return {"tokens": tokens, "token_ids": ids, "logprobs": lps, "offsets": offsets}


def generated(text: str) -> dict[str, Any]:
    return {"text": text, "finish_reason": "stop", "output_tokens": len(text.split())}


EMBED_DIM = 2048
"""Width of the oracle embedder's vectors: one dimension per distinct key."""
_KEY_DIMS: dict[str, int] = {}
_TAKEN: dict[int, str] = {}


def key_dim(key: str) -> int:
    """The dimension of `key`: its own for every distinct key (crc32, then the next free
    one), so different keys are exactly orthogonal while fewer than EMBED_DIM keys are
    in use in the process (beyond that, keys share dimensions by their crc32)."""
    if key in _KEY_DIMS:
        return _KEY_DIMS[key]
    d = zlib.crc32(key.encode("utf-8")) % EMBED_DIM
    if len(_TAKEN) < EMBED_DIM:
        while d in _TAKEN:
            d = (d + 1) % EMBED_DIM
        _TAKEN[d] = key
    _KEY_DIMS[key] = d
    return d


def keyed_embedding(keys: list[str]) -> dict[str, Any]:
    """An `embed` output: the L2-normalised sum of one unit vector per key (a word, a
    sentence, a whole text), so equal key sets give cosine 1 and disjoint ones 0."""
    vec = [0.0] * EMBED_DIM
    for k in keys:
        vec[key_dim(k)] += 1.0
    norm = sum(x * x for x in vec) ** 0.5
    return {"vector": [x / norm for x in vec] if norm else vec}


__all__ = ["CONTENT_KINDS", "EMBED_DIM", "KINDS", "found_in", "request_text", "REFUSAL_TEXT", "GroupDesign", "GroupLevel",
           "OracleCase", "OracleDef", "balanced_sides", "generated", "key_dim",
           "keyed_embedding", "scored_tokens", "stratified_sides", "word_id"]
