"""What the model said: the texts behind the numbers (issue 29, point 2).

Two things are made here from the plan, the responses and the codes:

* `item_texts`: for every row of a metric's `items` (summary.json), the prompt it was
  asked and the model's answer, written as the `prompt` and `answer` columns of
  items.csv (appended after the item's own columns). They stay out of summary.json's
  items, which would otherwise grow by two texts per item.
* `answers_section`: the report's "What the model said" section, kept in summary.json
  under `answers` (bounded: a few answers per group, a few items per metric, texts cut).

A model's answer is untrusted input: every text is cut to a bound with a marker saying
how much was left out; the HTML report escapes it (autoescape), the Markdown report
through its `finalize`, and items.csv quotes a cell a spreadsheet would run as a
formula (`csv_export._cell`).

Which plan items an item row stands for: items carry their stimulus and cell, not the
plan item (a pair item spans two slots, sampled decoding gives several answers). The
plan items of the item's stimulus and cell (of its stimulus only when no cell matches,
as for methods that report items outside the design's cells) are joined with ` || `, each text
labelled by what tells them apart (slot, variant, sample); when a metric has as many
rows for a stimulus and cell as there are plan items, the rows are taken in plan order,
one plan item each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, overload

import numpy as np
from pydantic import ValidationError

from biasaudit.plan import Plan, PlanItem
from biasaudit.plan.items import string_codes
from biasaudit.plan.requests import Request
from biasaudit.records.codes import Code
from biasaudit.records.metric_result import ItemRow, MetricResult
from biasaudit.records.responses import (
    ChoiceOutput,
    ClassifyOutput,
    GenerateOutput,
    NLIOutput,
    Response,
    output_as,
)
from biasaudit.records.summary import Answers
from biasaudit.report.csv_export import by_fields

CSV_CHARS = 2000
"""Most characters of a prompt or answer in an items.csv cell."""
SHOW_CHARS = 500
"""Most characters of a prompt or answer in the report."""
SAMPLES_PER_GROUP = 3
MAX_GROUPS = 12
"""Groups shown per breakdown field (the rest are counted, not shown)."""
TOP_ITEMS = 5
JOIN = " || "
"""Between the labelled texts of an item's several plan items (on one line: an item whose
texts have no line break stays one line of items.csv)."""
MAX_SIDES = 4
"""Texts shown per largest-difference item (its slots)."""


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with a marker saying how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters cut]"


def prompt_text(req: Request | None) -> str:
    """The rendered prompt: a chat request's messages (`role: content`, one a line), or
    the raw text (with the hypothesis of an NLI pair on its own line)."""
    if req is None:
        return ""
    if req.messages:
        return "\n".join(f"{m.get('role', '')}: {m.get('content', '')}" for m in req.messages)
    return "\n".join(t for t in (req.text, req.text_pair) if t)


_ANSWERED = frozenset({"generate", "choice", "classify", "classify_nli"})
"""Request kinds whose output says an answer (the others give numbers about the prompt)."""


def answer_text(req: Request | None, resp: Response | None) -> str:
    """What the model answered: a generation's text, a classification's label (the most
    probable one), a choice's option; empty for scoring probes (their output is numbers:
    the scored text is the prompt) and failed requests."""
    if req is None or resp is None or req.kind not in _ANSWERED:
        return ""
    try:
        out = output_as(req.kind, resp)
    except ValidationError:  # a responses.jsonl line (the viewer) of another shape: no answer to show
        return ""
    if isinstance(out, GenerateOutput):
        return out.text
    if isinstance(out, ChoiceOutput):
        return out.choice
    if isinstance(out, ClassifyOutput | NLIOutput) and out.probs:
        return str(max(out.probs.items(), key=lambda kv: kv[1])[0])
    return ""


def _label(it: PlanItem, varies: set[str]) -> str:
    parts = []
    if "slot" in varies:
        parts.append(it.slot)
    if "variant" in varies:
        parts.append(f"variant {it.variant}")
    if "sample" in varies:
        parts.append(f"sample {it.sample}")
    return ", ".join(parts)


def _joined(its: Sequence[PlanItem], plan: Plan, responses: Mapping[str, Response]) -> tuple[str, str]:
    """(prompt, answer) of one or several plan items; several are labelled and joined,
    identical prompts once."""
    if not its:
        return "", ""
    reqs = [plan.requests.get(it.key) for it in its]
    if len(its) == 1:
        return prompt_text(reqs[0]), answer_text(reqs[0], responses.get(its[0].key))
    varies = {f for f in ("slot", "variant", "sample") if len({getattr(it, f) for it in its}) > 1}
    prompts: dict[str, list[str]] = {}
    answers = []
    for it, req in zip(its, reqs, strict=True):
        lab = _label(it, varies)
        prompts.setdefault(prompt_text(req), []).append(lab)
        a = answer_text(req, responses.get(it.key))
        if a:
            answers.append(f"[{lab}] {a}")
    if len(prompts) == 1:
        prompt = next(iter(prompts))
    else:
        prompt = JOIN.join(f"[{'; '.join(labs)}] {p}" for p, labs in prompts.items())
    return prompt, JOIN.join(answers)


class _Index:
    """The plan items of a (stimulus, cell), or of a stimulus, in plan order. Held as
    the items' positions sorted by (stimulus, cell) and by stimulus (numpy, stable: plan
    order within each), read from the plan's columns: lists of every item per key held
    each item twice (issue 42); the items are built when asked for."""

    def __init__(self, plan: Plan) -> None:
        self.items = plan.items
        stimuli, s = string_codes(plan.items, "stimulus")
        cells, c = string_codes(plan.items, "cell")
        self.stimulus_id = {v: i for i, v in enumerate(stimuli)}
        self.cell_id = {v: i for i, v in enumerate(cells)}
        self.n_cells = max(1, len(cells))
        pair = s.astype(np.int64) * self.n_cells + c
        self.by_pair = np.argsort(pair, kind="stable")
        self.pairs = pair[self.by_pair]
        self.by_stimulus = np.argsort(s, kind="stable")
        self.stimuli = s[self.by_stimulus]

    def _run(self, order: np.ndarray, keys: np.ndarray, key: int) -> _Items:
        lo, hi = np.searchsorted(keys, key, "left"), np.searchsorted(keys, key, "right")
        return _Items(self.items, order[lo:hi].tolist())

    def of(self, stimulus: str, cell: str) -> Sequence[PlanItem]:
        s = self.stimulus_id.get(stimulus)
        if s is None:
            return []
        c = self.cell_id.get(cell)
        its = self._run(self.by_pair, self.pairs, s * self.n_cells + c) if c is not None else []
        return its or self._run(self.by_stimulus, self.stimuli, s)


class _Items(Sequence[PlanItem]):
    """Some of the plan's items, by position, each built when read (a row of a metric
    with one row per plan item reads one of its (stimulus, cell)'s items)."""

    __slots__ = ("_items", "_at")

    def __init__(self, items: Sequence[PlanItem], at: list[int]) -> None:
        self._items, self._at = items, at

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, i: int) -> PlanItem: ...

    @overload
    def __getitem__(self, i: slice) -> list[PlanItem]: ...

    def __getitem__(self, i: int | slice) -> PlanItem | list[PlanItem]:
        if isinstance(i, slice):
            return [self._items[j] for j in self._at[i]]
        return self._items[self._at[i]]


def _item_plan_items(items: Sequence[ItemRow], index: _Index) -> list[Sequence[PlanItem]]:
    """The plan items behind each item row (see the module docstring)."""
    rows = Counter((i.stimulus, i.cell or "") for i in items)
    seen: Counter[tuple[str, str]] = Counter()
    out: list[Sequence[PlanItem]] = []
    for i in items:
        k = (i.stimulus, i.cell or "")
        its = index.of(*k)
        if len(its) > 1 and rows[k] == len(its):
            its = [its[seen[k]]]
        seen[k] += 1
        out.append(its)
    return out


def item_texts(plan: Plan, responses: Mapping[str, Response],
               results: Mapping[str, MetricResult]) -> dict[str, list[dict[str, str]]]:
    """Metric id -> one {prompt, answer} per row of its `items`, each cut to CSV_CHARS."""
    index: _Index | None = None  # built only when a metric has item rows (issue 42: it holds every plan item)
    out: dict[str, list[dict[str, str]]] = {}
    for mid, r in results.items():
        rows = []
        if r.items and index is None:
            index = _Index(plan)
        for its in _item_plan_items(r.items, index) if index is not None else ():
            prompt, answer = _joined(its, plan, responses)
            rows.append({"prompt": clip(prompt, CSV_CHARS), "answer": clip(answer, CSV_CHARS)})
        out[mid] = rows
    return out


def _code(c: Code | None) -> str | float | None:
    if c is None:
        return None
    if c.status != "coded":
        return c.status.replace("_", " ")
    if c.label is not None:
        return c.label
    return c.value


class _Group:
    """One group of answered plan items as the section shows it: how many there are, and
    the SAMPLES_PER_GROUP it shows, kept as the items go by (never the group's items)."""

    __slots__ = ("extra", "n", "pick", "seen")

    def __init__(self) -> None:
        self.n = 0
        self.pick: list[PlanItem] = []  # one per stimulus first, in plan order
        self.extra: list[PlanItem] = []  # the first items of a stimulus already picked
        self.seen: set[str] = set()

    def add(self, it: PlanItem) -> None:
        self.n += 1
        if it.stimulus not in self.seen and len(self.pick) < SAMPLES_PER_GROUP:
            self.pick.append(it)
            self.seen.add(it.stimulus)
        elif len(self.extra) < SAMPLES_PER_GROUP:
            # when fewer stimuli than SAMPLES_PER_GROUP are answered, the rest in plan
            # order fill the picks: only these can (an item skipped once the picks are
            # full is never needed)
            self.extra.append(it)

    def shown(self) -> list[PlanItem]:
        return self.pick + self.extra[:SAMPLES_PER_GROUP - len(self.pick)]


class _Groups:
    """The groups of one breakdown in the order first seen: the first MAX_GROUPS kept
    (the section shows those), the others only counted."""

    __slots__ = ("kept", "more")

    def __init__(self) -> None:
        self.kept: dict[str, _Group] = {}
        self.more: set[str] = set()

    def add(self, g: str, it: PlanItem) -> None:
        grp = self.kept.get(g)
        if grp is None:
            if len(self.kept) >= MAX_GROUPS:
                self.more.add(g)
                return
            grp = self.kept[g] = _Group()
        grp.add(it)

    def __len__(self) -> int:
        return len(self.kept) + len(self.more)


def _breakdowns(plan: Plan, responses: Mapping[str, Response], fields: Mapping[str, Mapping[str, Any]],
                results: Mapping[str, MetricResult]) -> list[tuple[str, _Groups]]:
    """The answered items grouped by each metric's `by` field, or by the design's cells
    when no answered item has one ([]: no item answered). One pass over the plan: issue 42
    (10^6 requests) keeps a few items per group, not the groups' items."""
    by = list(dict.fromkeys(f for r in results.values() for f in by_fields(r.params)))
    groups = {f: _Groups() for f in by}
    cells = _Groups()
    answered = False
    for it in plan.items:
        r = responses.get(it.key)
        if r is None or not r.ok:
            continue
        answered = True
        fs = fields.get(it.stimulus, {})
        for f in by:
            v = fs.get(f)
            if v is not None and v != "":
                groups[f].add(str(v), it)
        cells.add(it.cell, it)
    if not answered:
        return []
    return [(f, g) for f, g in groups.items() if len(g)] or [("cell", cells)]


def _shown(pick: list[PlanItem], plan: Plan, responses: Mapping[str, Response],
           unit_of: Mapping[tuple[Any, ...], Any], codes: Mapping[str, Mapping[str, Code]]) -> list[dict[str, Any]]:
    shown = []
    for it in pick:
        req = plan.requests.get(it.key)
        uid = unit_of.get((it.cell, it.stimulus, it.slot, it.variant, it.sample))
        shown.append({
            "stimulus": it.stimulus, "cell": it.cell,
            "prompt": clip(prompt_text(req), SHOW_CHARS),
            "answer": clip(answer_text(req, responses.get(it.key)), SHOW_CHARS),
            "codes": [{"layer": lay, "code": _code(cs.get(uid) if uid else None)}
                      for lay, cs in codes.items()],
        })
    return shown


def _samples(plan: Plan, responses: Mapping[str, Response], results: Mapping[str, MetricResult],
             units: Sequence[Any], codes: Mapping[str, Mapping[str, Code]]) -> list[dict[str, Any]]:
    """Per group (each metric's `by` field; the design's cells when no metric breaks
    down), the first SAMPLES_PER_GROUP answers in plan order, one per stimulus first."""
    fields = {s.id: s.fields for s in plan.stimuli.stimuli}
    breakdowns = _breakdowns(plan, responses, fields, results)
    if not breakdowns:
        return []
    picks = [(f, g, grp, grp.shown()) for f, groups in breakdowns for g, grp in groups.kept.items()]
    # the unit of each shown item (the last unit of its place, as a dict of all of them gave)
    wanted = {(it.cell, it.stimulus, it.slot, it.variant, it.sample) for *_, pick in picks for it in pick}
    unit_of: dict[tuple[Any, ...], Any] = {}
    for u in units:
        k = (u.cell, u.stimulus, u.slot, u.variant, u.sample)
        if k in wanted:
            unit_of[k] = u.id
    n_groups = {f: len(groups) for f, groups in breakdowns}
    out = []
    for f, g, grp, pick in picks:
        shown = _shown(pick, plan, responses, unit_of, codes)
        out.append({"by": f, "group": g, "n": grp.n, "shown": len(shown), "groups": n_groups[f],
                    "answers": shown})
    return out


def _largest(plan: Plan, responses: Mapping[str, Response],
             results: Mapping[str, MetricResult]) -> list[dict[str, Any]]:
    """Per metric whose items carry a per-item difference (`diff`), the TOP_ITEMS items
    with the largest absolute difference (ties: by stimulus id, then cell), with the
    texts of every side."""
    index: _Index | None = None  # built only when a metric has scored items (it holds every plan item)
    out = []
    for mid, r in results.items():
        scored = [(i, float(i.diff)) for i in r.items
                  if isinstance(i.diff, int | float) and not isinstance(i.diff, bool) and i.diff == i.diff]
        if not scored:
            continue
        top = sorted(scored, key=lambda x: (-abs(x[1]), x[0].stimulus, x[0].cell or ""))[:TOP_ITEMS]
        index = index or _Index(plan)
        rows = []
        for i, diff in top:
            its = index.of(i.stimulus, i.cell or "")
            sides: dict[str, dict[str, str]] = {}
            for it in its:  # one text per slot (its first variant and sample)
                if it.slot not in sides and len(sides) < MAX_SIDES:
                    req = plan.requests.get(it.key)
                    sides[it.slot] = {"slot": it.slot, "text": clip(prompt_text(req), SHOW_CHARS),
                                      "answer": clip(answer_text(req, responses.get(it.key)), SHOW_CHARS)}
            rows.append({"stimulus": i.stimulus, "cell": i.cell or "", "diff": diff, "sides": list(sides.values())})
        out.append({"metric": mid, "title": r.title or r.name, "n_items": len(scored), "shown": len(rows),
                    "rows": rows})
    return out


def answers_section(plan: Plan, responses: Mapping[str, Response], results: Mapping[str, MetricResult],
                    units: Sequence[Any], codes: Mapping[str, Mapping[str, Code]]) -> Answers:
    """summary.json's `answers`: `samples` (generate probes: a few answers per group with
    their codes per layer) and `largest` (metrics with per-item differences: the items
    that differ most, with their texts)."""
    return Answers.model_validate({
        "samples": _samples(plan, responses, results, units, codes) if plan.kind == "generate" else [],
        "largest": _largest(plan, responses, results),
        "limits": {"per_group": SAMPLES_PER_GROUP, "groups": MAX_GROUPS, "items": TOP_ITEMS, "chars": SHOW_CHARS},
    })


__all__ = ["CSV_CHARS", "answer_text", "answers_section", "clip", "item_texts", "prompt_text"]
