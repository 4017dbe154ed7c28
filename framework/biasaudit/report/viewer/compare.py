"""`biasaudit view RUN_A RUN_B [...]`: runs side by side, per stimulus, in one page.

Each run is read as the single-run viewer reads it (`load.load_view`: its answers, every
layer's code and evidence, its item differences), then its responses are laid next to
the other runs' responses to the same stimulus.

Matching. Two runs' stimuli are the same stimulus when their content hashes are equal
(`stimulus_sha`: the sha256 of the stimulus's fields that the run's items record, or of
the fields in the data file when the metrics write no items), whatever their ids; where a
run has no hash for a stimulus, the stimulus id alone matches it (counted). A stimulus
id whose content differs between runs is two stimuli (counted). Runs that share no
stimulus cannot be compared: one line, exit code 2. Within a stimulus, responses of the
same condition (cell), slot, paraphrase and sample are side by side; when the runs
have different cells and each has one cell (prompt variants as separate specs), the
cell is left out of that match.

"Differs most" (the default order), per stimulus, over its responses side by side:
1. code disagreements: for each response position and coding layer coded in two or
   more runs, the number of runs whose code (the label, else the status: abstain,
   failed) is not the most common one (two runs: 1 when they differ; three runs
   `x x y`: 1, `x y z`: 2), summed;
2. then the spread of the item difference: for each metric, the largest
   `max - min` over the runs of the item difference behind a response position,
   the largest over metrics (the page can sort by one metric's);
3. then the number of response positions whose answers (text, or a scoring probe's
   numbers) are not all equal;
then plan order. Stimuli matched in fewer than two runs come last.

Bounds: each run is read as far as `max_rows` responses (plan order); the page embeds
at most `max_rows` responses and `load.MAX_BYTES` of text in all, whole stimuli in the
order above, so what is cut is what differs least; every cut is said in a notice.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from biasaudit._util.fileio import open_input
from biasaudit._util.trail import stream_records
from biasaudit._version import __version__
from biasaudit.errors import StoreError
from biasaudit.metrics.base import stimulus_sha
from biasaudit.records.summary import RunSummary, upgraded
from biasaudit.report.viewer import load
from biasaudit.report.viewer.model import ViewCode, ViewData, ViewEstimate, ViewRow

MAX_RUNS = 8
"""Runs side by side at most: more columns than this are not readable."""
COMPARE_FILE = "compare.html"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CompareAnswer(_Record):
    """One run's response at one position of a stimulus."""

    run: int
    """Index into `CompareData.runs`."""
    stimulus: str
    """The run's own id of the stimulus (ids may differ when content matched)."""
    cell: str
    prompt: str = ""
    """The prompt, when it differs from another run's at this position (else in the unit)."""
    answer: str = ""
    output: str = ""
    status: str = "ok"
    error: str = ""
    codes: list[ViewCode] = Field(default_factory=list)
    items: dict[str, float | None] = Field(default_factory=dict)
    odd: list[str] = Field(default_factory=list)
    """The layers whose code here is not the most common at this position."""


class CompareUnit(_Record):
    """One response position of a stimulus (cell, slot, paraphrase, sample), one answer per run that has it."""

    cell: str
    """The cell, or empty when the runs' cells are not matched (each answer names its own)."""
    slot: str = ""
    variant: int = 0
    sample: int = 0
    prompt: str = ""
    """The prompt, when every run sent the same one."""
    answers: list[CompareAnswer] = Field(default_factory=list)
    disagree: int = 0
    """Runs whose code is not the most common, summed over layers."""
    answers_differ: bool = False
    spread: dict[str, float] = Field(default_factory=dict)
    """Metric -> max - min of the item difference over the runs."""


class CompareEntry(_Record):
    """One stimulus, as every run that has it answered it."""

    stimulus: str
    runs: list[int] = Field(default_factory=list)
    """The runs that have this stimulus (all of them read, embedded or not)."""
    matched: bool = False
    """In two or more runs."""
    by_id: bool = False
    """Matched by id alone (a run holds no content hash for it)."""
    groups: dict[str, str] = Field(default_factory=dict)
    fields: dict[str, str] = Field(default_factory=dict)
    units: list[CompareUnit] = Field(default_factory=list)
    disagree: int = 0
    units_differ: int = 0
    """Positions where some layer's codes are not all equal."""
    answers_differ: int = 0
    spread: dict[str, float] = Field(default_factory=dict)
    spread_max: float | None = None
    order: int = 0
    """Plan order (first run that has it first)."""


class CompareRun(_Record):
    letter: str
    label: str
    audit: str = ""
    model: str = ""
    run_id: str = ""
    overall: str = ""
    folder: str = ""
    responses: int = 0
    read: int = 0
    """Responses read (plan order, at most `max_rows`)."""
    stimuli: int = 0
    matched: int = 0
    """Its stimuli matched in another run."""
    cells: list[str] = Field(default_factory=list)


class Matching(_Record):
    stimuli: int = 0
    """Distinct stimuli over all runs (content, else id)."""
    in_all: int = 0
    in_some: int = 0
    """In two or more runs but not all."""
    unmatched: int = 0
    """In one run only."""
    by_id: int = 0
    conflicts: int = 0
    """Ids whose content differs between runs (each counted as separate stimuli)."""
    cells: str = "cell"
    """How positions are matched: `cell` (same cell) or `any` (the cell left out)."""


class CompareData(_Record):
    kind: str = "compare"
    title: str
    version: str = ""
    runs: list[CompareRun] = Field(default_factory=list)
    matching: Matching = Field(default_factory=Matching)
    entries: list[CompareEntry] = Field(default_factory=list)
    estimates: list[ViewEstimate] = Field(default_factory=list)
    """Each run's pooled estimates (no cell, no group)."""
    notices: list[str] = Field(default_factory=list)
    page_size: int = 20


# -- reading the runs ------------------------------------------------------------------

def _letter(i: int) -> str:
    return chr(ord("A") + i)


def _summary(run_dir: Path) -> RunSummary:
    raw = load._read_json(run_dir / "summary.json", "summary")
    if isinstance(raw, dict) and "suite" in raw:
        raise StoreError("a suite folder, not a run folder", file=str(run_dir),
                         hint="give its run folders (or the suite folder alone: `biasaudit view SUITE_DIR`)")
    return load._validated(RunSummary, run_dir / "summary.json", upgraded(raw, file=str(run_dir / "summary.json")))


def _shas(summary: RunSummary, run_dir: Path) -> dict[str, str]:
    """Stimulus id -> content hash: as the run's items recorded it, else of the data
    file's fields (when the file is unchanged since the run)."""
    out: dict[str, str] = {}
    for r in summary.metrics.values():
        for it in r.items:
            if it.stimulus_sha and it.stimulus not in out:
                out[it.stimulus] = it.stimulus_sha
    scratch: list[str] = []
    fields = load._stimulus_fields(summary, run_dir, scratch, "")
    if not scratch:  # no notice: the fields are the data file's, whole
        for sid, f in fields.items():
            out.setdefault(sid, stimulus_sha(f))
    return out


def _stimulus_ids(run_dir: Path) -> list[str]:
    """Every stimulus id of the run's responses, in plan order (all of them, not only
    those read: the matching counts cover the whole run)."""
    path = run_dir / "responses.jsonl"
    if not path.is_file():
        return []
    skipped = [0]
    seen: dict[str, None] = {}
    with open_input(path, 2**62, what="responses.jsonl", error=StoreError) as f:
        for obj in stream_records(f, skipped, max_line=load.MAX_LINE, kind="responses", file=str(path)):
            seen[str(obj.get("stimulus", ""))] = None
    return list(seen)


class _Entries:
    """Stimuli over runs: a stimulus joins the entry of the same content hash, or of the
    same id where either side has no hash (see the module text)."""

    def __init__(self) -> None:
        self.entries: list[CompareEntry] = []
        self.sha: list[str | None] = []
        self.by_sha: dict[str, int] = {}
        self.by_id: dict[str, list[int]] = {}
        self.conflicts: set[str] = set()
        self.of: list[dict[str, int]] = []
        """Per run: its stimulus id -> entry index."""

    def add_run(self, run: int, ids: list[str], shas: dict[str, str]) -> None:
        mine: dict[str, int] = {}
        for sid in ids:
            h = shas.get(sid)
            k = self._find(run, sid, h)
            if k is None:
                if any(self.sha[j] is not None and h is not None and self.sha[j] != h for j in self.by_id.get(sid, [])):
                    self.conflicts.add(sid)
                k = len(self.entries)
                self.entries.append(CompareEntry(stimulus=sid, order=k))
                self.sha.append(h)
                if h is not None:
                    self.by_sha.setdefault(h, k)
                self.by_id.setdefault(sid, []).append(k)
            e = self.entries[k]
            if h is None or self.sha[k] is None:
                e.by_id = e.by_id or bool(e.runs)
                if self.sha[k] is None and h is not None:
                    self.sha[k] = h
                    self.by_sha.setdefault(h, k)
            e.runs.append(run)
            mine[sid] = k
        self.of.append(mine)

    def _find(self, run: int, sid: str, h: str | None) -> int | None:
        if h is not None and h in self.by_sha and run not in self.entries[self.by_sha[h]].runs:
            return self.by_sha[h]
        for k in self.by_id.get(sid, []):
            if run not in self.entries[k].runs and (h is None or self.sha[k] is None):
                return k
        return None


def _label(runs: list[tuple[RunSummary, Path]], i: int) -> str:
    """The model; the audit too when the runs' audits differ; the run id when two runs
    would read the same."""
    s = runs[i][0]
    audits = {r.audit.name for r, _ in runs}
    base = s.model.name + (f" / {s.audit.name}" if len(audits) > 1 else "")
    same = [j for j, (r, _) in enumerate(runs)
            if r.model.name + (f" / {r.audit.name}" if len(audits) > 1 else "") == base]
    return base + (f" ({s.run_id or runs[i][1].name})" if len(same) > 1 else "")


def load_compare(folders: list[Path], *, max_rows: int = load.MAX_ROWS, base: Path | None = None) -> CompareData:
    """The compare page's data for two or more run folders (`base`: the folder the runs'
    paths are shown relative to)."""
    if len(folders) < 2:
        raise StoreError("compare needs two or more run folders", file=", ".join(map(str, folders)),
                         hint="give two run folders, or a folder holding several runs (one run: biasaudit view RUN_DIR)")
    if len(folders) > MAX_RUNS:
        raise StoreError(f"{len(folders)} runs: the page compares at most {MAX_RUNS} side by side",
                         file=", ".join(map(str, folders[:3])) + ", ...",
                         hint=f"give at most {MAX_RUNS} run folders")
    for f in folders:
        if not f.is_dir():
            raise StoreError("not a folder", file=str(f), hint=load.HINT)
    summaries = [(_summary(f), f) for f in folders]
    titles = list(dict.fromkeys(s.audit.title or s.audit.name for s, _ in summaries))
    data = CompareData(title=" vs ".join(titles) if len(titles) <= 3 else f"{len(titles)} audits", version=__version__)
    entries = _Entries()
    views: list[ViewData] = []
    for i, (s, f) in enumerate(summaries):
        letter = _letter(i)
        ids = _stimulus_ids(f)
        entries.add_run(i, ids, _shas(s, f))
        view = load.load_view(f, max_rows=max_rows)
        views.append(view)
        vr = view.runs[0]
        real = f.resolve()
        rel = str(real.relative_to(base.resolve())) if base is not None and base.resolve() in real.parents else str(f)
        data.runs.append(CompareRun(letter=letter, label=_label(summaries, i), audit=s.audit.name, model=s.model.name,
                                    run_id=s.run_id, overall=s.overall, folder=rel, responses=vr.responses,
                                    read=vr.shown, stimuli=len(ids), cells=list(s.design.cells)))
        data.notices.extend(f"{letter}: {n.removeprefix(vr.label + ': ')}" for n in view.notices)
        data.estimates.extend(e.model_copy(update={"run": i, "rows": []}) for e in view.estimates
                              if not e.cell and not e.group and not e.factor)
    for e in entries.entries:
        e.matched = len(e.runs) >= 2
    for i, run in enumerate(data.runs):
        run.matched = sum(entries.entries[k].matched for k in entries.of[i].values())
    alone = [i for i, r in enumerate(data.runs) if r.matched == 0]
    if alone:
        who = "the runs share" if len(alone) == len(data.runs) else f"run {data.runs[alone[0]].letter} shares"
        raise StoreError(f"{who} no stimulus (the same content, or the same id where a run holds no content hash): "
                         "runs of different data cannot be compared stimulus by stimulus",
                         file=str(folders[alone[-1]]),
                         hint="compare runs of the same spec or data (`biasaudit compare` sets any runs' estimates "
                              "side by side)")
    cells = [set(r.cells) for r in data.runs]
    any_cell = any(c != cells[0] for c in cells) and all(len(c) <= 1 for c in cells)
    if any(c != cells[0] for c in cells) and not any_cell:
        data.notices.append("the runs have different conditions (cells): only responses of the same cell are side by "
                            "side")
    data.matching = Matching(
        stimuli=len(entries.entries), in_all=sum(len(e.runs) == len(folders) for e in entries.entries),
        in_some=sum(2 <= len(e.runs) < len(folders) for e in entries.entries),
        unmatched=sum(len(e.runs) < 2 for e in entries.entries), by_id=sum(e.by_id for e in entries.entries),
        conflicts=len(entries.conflicts), cells="any" if any_cell else "cell")
    _fill(entries, views, any_cell)
    ordered = sorted(entries.entries, key=differs_most)
    data.entries = _bounded(ordered, max_rows, data.notices)
    return data


def _fill(entries: _Entries, views: list[ViewData], any_cell: bool) -> None:
    """Each run's rows into their stimulus's positions, then each entry's measures."""
    units: list[dict[tuple[str, str, int, int], CompareUnit]] = [{} for _ in entries.entries]
    for i, view in enumerate(views):
        for row in view.rows:
            k = entries.of[i].get(row.stimulus)
            if k is None:
                continue
            e = entries.entries[k]
            if not e.fields:
                e.fields, e.groups = dict(row.fields), dict(row.groups)
            key = ("" if any_cell else row.cell, row.slot, row.variant, row.sample)
            u = units[k].get(key)
            if u is None:
                u = units[k][key] = CompareUnit(cell=key[0], slot=row.slot, variant=row.variant, sample=row.sample)
            u.answers.append(_answer(i, row))
    for k, e in enumerate(entries.entries):
        e.units = list(units[k].values())
        for u in e.units:
            measure_unit(u)
        measure_entry(e)


def _answer(run: int, row: ViewRow) -> CompareAnswer:
    return CompareAnswer(run=run, stimulus=row.stimulus, cell=row.cell, prompt=row.prompt, answer=row.answer,
                         output=row.output or _scored(row), status=row.status, error=row.error,
                         codes=list(row.codes), items=dict(row.items))


def _scored(row: ViewRow) -> str:
    """A scoring or choice response as compared and shown: the single-run viewer reads it
    into a card (`row.scoring`, `row.options`) and leaves `output` empty, so the compare
    page writes the card's numbers out: this response's own sentence total (its measure
    as the metric names it), or each option's probability."""
    if row.scoring is not None:
        own = [x for x in row.scoring.sentences if x.slot == row.slot] or row.scoring.sentences
        return "; ".join(f"{x.slot}: {row.scoring.measure} {'not scored' if x.total is None else f'{x.total:.6g}'}"
                         for x in own)
    if row.options:
        return "; ".join(f"{o.option}: {'-' if o.prob is None else f'{o.prob:.6g}'}" for o in row.options)
    return ""


# -- what differs ----------------------------------------------------------------------

def code_of(c: ViewCode) -> str:
    """A code as compared: the label (or value), else the status (abstain, failed, ...)."""
    return c.code or c.status


def measure_unit(u: CompareUnit) -> None:
    """The position's code disagreements (runs out of line with the most common code,
    per layer), whether its answers differ, and each metric's spread of item
    differences; the prompt kept once when every run sent the same."""
    layers = list(dict.fromkeys(c.layer for a in u.answers for c in a.codes))
    u.disagree = 0
    for layer in layers:
        got = {a.run: code_of(c) for a in u.answers for c in a.codes if c.layer == layer}
        if len(got) < 2:
            continue
        counts = Counter(got.values()).most_common()
        top = counts[0][1]
        u.disagree += len(got) - top
        tied = sum(n == top for _, n in counts) > 1
        for a in u.answers:
            if a.run in got and (tied or got[a.run] != counts[0][0]) and len(counts) > 1:
                a.odd.append(layer)
    texts = {_said(a) for a in u.answers}
    u.answers_differ = len(u.answers) >= 2 and len(texts) > 1
    metrics = list(dict.fromkeys(m for a in u.answers for m in a.items))
    u.spread = {}
    for m in metrics:
        vals = [v for a in u.answers if (v := a.items.get(m)) is not None]
        if len(vals) >= 2:
            u.spread[m] = max(vals) - min(vals)
    prompts = {a.prompt for a in u.answers}
    if len(prompts) == 1:
        u.prompt = prompts.pop()
        for a in u.answers:
            a.prompt = ""


def _said(a: CompareAnswer) -> str:
    return f"{a.status}\x00{a.answer}\x00{a.output}\x00{a.error}"


def measure_entry(e: CompareEntry) -> None:
    e.disagree = sum(u.disagree for u in e.units)
    e.units_differ = sum(u.disagree > 0 for u in e.units)
    e.answers_differ = sum(u.answers_differ for u in e.units)
    e.spread = {}
    for u in e.units:
        for m, s in u.spread.items():
            e.spread[m] = max(s, e.spread.get(m, s))
    e.spread_max = max(e.spread.values()) if e.spread else None


def differs_most(e: CompareEntry) -> tuple[bool, int, float, int, int]:
    """The default order's key (ascending): matched stimuli first, then more code
    disagreements, a larger item-difference spread (none: last), more positions whose
    answers differ, then plan order."""
    spread = -e.spread_max if e.spread_max is not None else float("inf")
    return not e.matched, -e.disagree, spread, -e.answers_differ, e.order


def _bounded(ordered: list[CompareEntry], max_rows: int, notices: list[str]) -> list[CompareEntry]:
    """Whole stimuli in order while they fit `max_rows` responses and `MAX_BYTES` of
    text; the rest counted in a notice."""
    out: list[CompareEntry] = []
    rows = size = 0
    for e in ordered:
        n = sum(len(u.answers) for u in e.units)
        b = sum(_size(u) for u in e.units) + sum(len(k) + len(v) for k, v in e.fields.items())
        if out and (rows + n > max_rows or size + b > load.MAX_BYTES):
            break
        out.append(e)
        rows, size = rows + n, size + b
    left = len(ordered) - len(out)
    if left:
        notices.append(f"the page holds {len(out)} of {len(ordered)} stimuli ({rows} responses; at most {max_rows} "
                       f"responses and {load.MAX_BYTES // 2**20} MiB of text): the {left} that differ least are "
                       "left out (biasaudit view --max-rows N shows more; every response is in each run's "
                       "responses.jsonl)")
    return out


def _size(u: CompareUnit) -> int:
    return len(u.prompt) + sum(len(a.prompt) + len(a.answer) + len(a.output) + len(a.error) for a in u.answers)


__all__ = ["COMPARE_FILE", "MAX_RUNS", "CompareData", "CompareEntry", "CompareUnit", "code_of", "differs_most",
           "load_compare", "measure_entry", "measure_unit"]
