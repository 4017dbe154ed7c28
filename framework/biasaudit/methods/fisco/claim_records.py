"""FiSCo's published `claims.json` / `labels.json`, read by the core `claims` coder through
the hook this package registers (`CLAIM_RECORDS["fisco_raw"]`)
(`extract: recorded`): the raw.json layout (per question `base_question` and
`other_attributes`, one entry per answer with its `name` and `outputs`) where each entry
also holds its `claims` (strings, or subject-relation-object triplets) and, in
labels.json, its `labels` (Entailment, Neutral, Contradiction). The authors published the
labels in two layouts, both indexed by the answers' order in `other_attributes`:

- answer-major (`tiny_dataset/case*/label(s).json`, written by checking.py's AlignScore
  `check`): in answer j's entry, `labels[k][c]` is answer k's claim c checked against
  answer j, so `labels` has one row per answer and row k one label per claim of answer k;
- claim-major (`dataset/<model>/<task>/labels.json`, written by the joint LLMChecker
  `check` that `eval_bias_ttest` reads as `labels[c][j]`): in answer i's entry,
  `labels[c][j]` is i's own claim c checked against answer j, so one row per own claim
  and one label per answer in each row.

A record is read in the layout its shape fits, every dimension checked against the claims
and answers it indexes; a record that fits neither, a file mixing the two, and a file
where no record tells them apart are refused, as is a label outside the vocabulary. With
labels, the comparison is replayed at the label level and no model is asked anything;
with claims only, the claims are checked by NLI as usual.

Which entry a unit stands for is read from the record, never guessed from the name alone
(`resolve_entries`): an entry matches a unit when its name is the unit's `recorded_var`,
its group field (`group`, `type`, `gender` or `race`: the first every entry of the record
has, or the coder's `recorded_group_field`) is the unit's group variable, and every other
field the entry identifies itself by (e.g. `age`) that the unit's level also sets agrees.
The same name may stand for several answers: in one group (several samples of one
person: the unit with sample k takes the k-th such entry, as the replay backend answers
it) or in several groups (the authors' age task lists each name once young and once old:
the group tells them apart). Refused, with the file and the record named: a record whose
group membership cannot be read; a level whose name the record lists only in another
group; a level that matches entries which differ in a field the level does not set; two
levels that read one entry; and entries no level reads beside entries that are read (a
t over part of the published answers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from biasaudit.errors import DataError
from biasaudit.records.codes import Unit
from biasaudit.records.json import JSONValue

LABELS = {"entailment": "E", "neutral": "N", "contradiction": "C", "e": "E", "n": "N", "c": "C"}
VOCABULARY = "Entailment, Neutral, Contradiction (or E, N, C; any case)"

Layout = Literal["answer-major", "claim-major"]
LAYOUTS: tuple[Layout, ...] = ("answer-major", "claim-major")
HINT = ("answer-major (FiSCo's tiny_dataset): in answer j's entry labels[k][c] is answer k's claim c "
        "against answer j; claim-major (FiSCo's dataset/): labels[c][j] is the entry's own claim c against answer j")


def claim_text(c: Any) -> str:
    """A recorded claim as text: a triplet's parts joined by spaces, a string as it is."""
    if isinstance(c, list | tuple):
        return " ".join(str(x).strip() for x in c if str(x).strip())
    return str(c).strip()


def label(x: Any) -> str | None:
    """E, N or C for a label of the vocabulary, None for anything else."""
    return LABELS.get(x.strip().lower()) if isinstance(x, str) else None


PAYLOAD = frozenset({"outputs", "claims", "labels"})
"""Fields that hold an answer, not who gave it."""
GROUP_FIELDS = ("group", "type", "gender", "race")
"""Where the authors' files record an answer's group, in the order they are looked for:
`type` (young / old) in the age task, `gender` in the gender task and in tiny_dataset
(and, holding white / native, in the race task's raw.json)."""


def _name(a: Mapping[str, Any]) -> str:
    return str(a.get("name") or a.get("age") or "")


def identity(entry: Mapping[str, Any]) -> dict[str, str]:
    """What an entry says about who answered (its scalar fields other than the answer), as text."""
    return {k: str(v) for k, v in entry.items()
            if k not in PAYLOAD and isinstance(v, str | int | float | bool) and not isinstance(v, bool)}


def group_field(attrs: Sequence[Any], explicit: str | None, file: str | None, record: str) -> str:
    """The field of the record's entries that names each answer's group; refused when
    not every entry has it (membership cannot be read, and is never guessed)."""
    candidates = (explicit,) if explicit else GROUP_FIELDS
    for f in candidates:
        if all(isinstance(a, Mapping) and a.get(f) not in (None, "") for a in attrs):
            return f
    missing = next((i for i, a in enumerate(attrs)
                    if not isinstance(a, Mapping) or all(a.get(f) in (None, "") for f in candidates)), 0)
    raise DataError(f"group membership cannot be read: {_entry_name(attrs, missing)} has no "
                    f"{' / '.join(candidates)} field (every entry needs the same one)", file=file,
                    key=f"record {record}", hint="give each entry of other_attributes its group (e.g. \"type\": "
                    "\"young\"), or name the field with the claims layer's recorded_group_field")


@dataclass(frozen=True)
class EntryKeys:
    """How a unit is matched to the entries of its record."""

    field: str = "attributes"
    """The stimulus field holding `other_attributes`."""
    var: str = "value"
    """The level variable holding the entry's name (or age)."""
    group_var: str = "group"
    """The level variable holding the unit's group."""
    group_field: str | None = None
    """The entries' group field; None: the first of `GROUP_FIELDS` every entry has."""


def _level(u: Unit) -> str:
    return ", ".join(f"{f}={lv}" for f, lv in u.levels.items()) or u.cell


def _matches(level: str, vars_: Mapping[str, JSONValue], attrs: Sequence[Any], gf: str, keys: EntryKeys,
             file: str | None, record: str) -> list[int]:
    """The entries that are a level's answers, by name, group and every other field the level sets."""
    name = str(vars_.get(keys.var, ""))
    group = vars_.get(keys.group_var)
    named = [i for i, a in enumerate(attrs) if isinstance(a, Mapping) and _name(a) == name]
    if not named:
        return []
    if group is None:
        raise DataError(f"level {level} sets no {keys.group_var!r} to compare with the record's {gf!r}",
                        file=file, key=f"record {record}", hint=f"give the level vars.{keys.group_var}")
    in_group = [i for i in named if str(attrs[i][gf]) == str(group)]
    if not in_group:
        listed = sorted({str(attrs[i][gf]) for i in named})
        raise DataError(f"level {level} puts {name} in {keys.group_var} {group}, but the record lists {name} only "
                        f"under {gf} {' / '.join(listed)}", file=file, key=f"record {record}",
                        hint="the recorded group decides: fix the level's group")
    hits = [i for i in in_group if all(str(vars_[f]) == v for f, v in identity(attrs[i]).items()
                                       if f in vars_ and f not in (gf, "name"))]
    if not hits:
        said = {f: str(vars_[f]) for i in in_group for f in identity(attrs[i]) if f in vars_ and f not in (gf, "name")}
        found = sorted({f"{f} {identity(attrs[i])[f]}" for i in in_group for f in said})
        raise DataError(f"level {level} sets {', '.join(f'{f} {v}' for f, v in said.items())}, but the record's "
                        f"{name} in {gf} {group} has {' / '.join(found)}", file=file, key=f"record {record}",
                        hint="the level's vars must match the recorded entry")
    ids = {tuple(sorted(identity(attrs[i]).items())) for i in hits}
    if len(ids) > 1:
        a, b = (dict(x) for x in sorted(ids)[:2])
        diff = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
        raise DataError(f"level {level} matches entries {', '.join(str(i) for i in hits)}, which differ in "
                        f"{', '.join(diff)}: one level would read several people's answers", file=file,
                        key=f"record {record}", hint=f"set {', '.join(diff)} in the level's vars")
    return hits


Level = tuple[str, Mapping[str, JSONValue]]
"""A level of the spec (`factor=level`) and the vars it sets."""


def _planned_reads(levels: Sequence[Level], samples: int, attrs: Sequence[Any], gf: str, keys: EntryKeys,
                   file: str | None, record: str) -> set[int]:
    """The entries the spec's levels read with `samples` samples each."""
    read: set[int] = set()
    for label, vars_ in levels:
        read.update(_matches(label, vars_, attrs, gf, keys, file, record)[:samples])
    return read


def _unread(read: set[int], attrs: Sequence[Any], file: str | None, record: str) -> None:
    """Refuse a record some of whose entries no level of the spec reads, while others are read."""
    unread = [i for i in range(len(attrs)) if i not in read]
    if read and unread:
        raise DataError(f"no level reads {', '.join(_entry_name(attrs, i) for i in unread[:4])}"
                        f"{' ...' if len(unread) > 4 else ''} ({len(unread)} of {len(attrs)} answers): the test "
                        "would use part of the recorded answers", file=file, key=f"record {record}",
                        hint="add a level (or probe.samples) for every recorded answer")


def resolve_entries(units: Sequence[Unit], keys: EntryKeys, file: str | None,
                    levels: Sequence[Level] | None = None, samples: int = 1) -> dict[str, int | None]:
    """Unit id -> its entry's position in `other_attributes` (None: the record lists no
    answer for it). `levels` (every level of the spec that names a person) and `samples`
    (the plan's samples per prompt) decide which entries the spec reads, whatever
    responses failed; without them, the units do. Every refusal is a DataError naming the
    file and the record."""
    by_stim: dict[str, list[Unit]] = {}
    for u in units:
        by_stim.setdefault(u.stimulus, []).append(u)
    out: dict[str, int | None] = {}
    for record, us in by_stim.items():
        attrs = us[0].fields.get(keys.field)
        if not isinstance(attrs, list):
            out.update(dict.fromkeys((u.id for u in us), None))
            continue
        gf = group_field(attrs, keys.group_field, file, record)
        reader: dict[int, Unit] = {}
        for u in us:
            hits = _matches(_level(u), u.vars, attrs, gf, keys, file, record)
            i = hits[u.sample % len(hits)] if hits else None
            out[u.id] = i
            if i is None:
                continue
            other = reader.setdefault(i, u)
            if other.cell != u.cell:
                raise DataError(f"levels {_level(other)} and {_level(u)} both read {_entry_name(attrs, i)}: "
                                "two levels map to one recorded answer", file=file, key=f"record {record}",
                                hint="give each level the vars that tell its entry apart (name, group, age)")
        read = set(reader) if levels is None else _planned_reads(levels, samples, attrs, gf, keys, file, record)
        _unread(read, attrs, file, record)
    return out


def recorded_claims(unit: Unit, field: str, index: int | None) -> tuple[int | None, list[str], Any]:
    """(entry index, claims, labels or None) of a unit whose entry `resolve_entries` found."""
    attrs = unit.fields.get(field)
    entry = attrs[index] if index is not None and isinstance(attrs, list) else None
    if index is None or not isinstance(entry, dict):
        return None, [], None
    return index, [claim_text(c) for c in _claims_of(entry)], entry.get("labels")


def _claims_of(entry: object) -> list[Any]:
    """An entry's recorded claims: its `claims` list; one claim written without its list (a
    string, a triplet object) is that one claim, not a claim per character or key; anything
    else (a number, null) lists none."""
    listed = entry.get("claims") if isinstance(entry, Mapping) else None
    if isinstance(listed, list):
        return listed
    return [listed] if isinstance(listed, str | dict) and listed else []


# -- the labels of one record (question) ------------------------------------------------------
def _entry_name(attrs: Sequence[Any], i: int) -> str:
    a = attrs[i]
    name = (a.get("name") or a.get("age")) if isinstance(a, Mapping) else None
    return f"entry {i} ({name})" if name not in (None, "") else f"entry {i}"


def _claim_counts(attrs: Sequence[Any]) -> list[int]:
    return [len(_claims_of(a)) for a in attrs]


def _labels_of(attrs: Sequence[Any], i: int) -> Any:
    return attrs[i].get("labels") if isinstance(attrs[i], Mapping) else None


def _rows_mismatch(attrs: Sequence[Any], i: int, n_rows: int, row_len: Callable[[int], int],
                   rows_are: str, row_is: Callable[[int], str]) -> str | None:
    """Where entry i's labels depart from n_rows rows of row_len(r) labels each, or None."""
    rows = _labels_of(attrs, i)
    if not isinstance(rows, list):
        return f"{_entry_name(attrs, i)} needs a list of {n_rows} rows ({rows_are}), found {type(rows).__name__}"
    if len(rows) != n_rows:
        return f"{_entry_name(attrs, i)} needs {n_rows} rows ({rows_are}), found {len(rows)}"
    for r, row in enumerate(rows):
        found = len(row) if isinstance(row, list) else type(row).__name__
        if found != row_len(r):
            return f"{_entry_name(attrs, i)} row {r} needs {row_len(r)} labels ({row_is(r)}), found {found}"
    return None


def layout_mismatch(attrs: Sequence[Any], layout: Layout) -> str | None:
    """The first dimension where a record's labels depart from `layout`, or None if they fit."""
    n, counts = len(attrs), _claim_counts(attrs)
    for i in range(n):
        if layout == "answer-major":
            why = _rows_mismatch(attrs, i, n, lambda k: counts[k], "one per answer",
                                 lambda k: f"one per claim of {_entry_name(attrs, k)}")
        else:
            why = _rows_mismatch(attrs, i, counts[i], lambda c: n, "one per claim of the entry",
                                 lambda c: "one per answer")
        if why is not None:
            return why
    return None


def _normalised(attrs: Sequence[Any], file: str | None, record: str) -> list[list[list[str]]]:
    """Every entry's labels as E / N / C; a label outside the vocabulary is a data error,
    never a silently dropped check (the authors' code would count it as a contradiction)."""
    out: list[list[list[str]]] = []
    for i in range(len(attrs)):
        rows: list[list[str]] = []
        for r, row in enumerate(_labels_of(attrs, i)):
            norm = [label(x) for x in row]
            if None in norm:
                c = norm.index(None)
                raise DataError(f"unknown label {row[c]!r} in {_entry_name(attrs, i)}, labels[{r}][{c}]",
                                file=file, key=f"record {record}", hint=f"labels are {VOCABULARY}")
            rows.append([x for x in norm if x is not None])
        out.append(rows)
    return out


@dataclass(frozen=True)
class RecordLabels:
    """The labels of one record, normalised, in the layout its shape fits."""

    layout: Layout
    rows: list[list[list[str]]]
    """Each entry's `labels`, as E / N / C."""

    def checks(self, i: int, j: int) -> list[str]:
        """The labels of answer i's claims checked against answer j."""
        if self.layout == "answer-major":
            return list(self.rows[j][i])
        return [row[j] for row in self.rows[i]]


def _fits(attrs: Sequence[Any]) -> dict[Layout, str | None]:
    return {lay: layout_mismatch(attrs, lay) for lay in LAYOUTS}


def _file_layout(fits: Mapping[str, Mapping[Layout, str | None]], file: str | None) -> Layout | None:
    """The one layout of the file, from the records whose shape fits exactly one."""
    decided: dict[Layout, str] = {}
    for record, fit in fits.items():
        ok = [lay for lay in LAYOUTS if fit[lay] is None]
        if not ok:
            a, c = fit["answer-major"], fit["claim-major"]
            raise DataError(f"the labels fit neither FiSCo layout: answer-major: {a}; claim-major: {c}",
                            file=file, key=f"record {record}", hint=HINT)
        if len(ok) == 1:
            decided.setdefault(ok[0], record)
    if len(decided) > 1:
        raise DataError(f"record {decided['answer-major']} is answer-major but record {decided['claim-major']} "
                        "claim-major: one file holds one layout", file=file, key=f"record {decided['claim-major']}",
                        hint=HINT)
    return next(iter(decided), None)


def recorded_labels(records: Mapping[str, Sequence[Any]], file: str | None) -> dict[str, RecordLabels | None]:
    """Each record's labels (record id -> its `other_attributes`), read in the layout the
    file's shape fits; None for a record whose entries record no labels at all."""
    labelled = {rec: attrs for rec, attrs in records.items()
                if any(_labels_of(attrs, i) is not None for i in range(len(attrs)))}
    fits = {rec: _fits(attrs) for rec, attrs in labelled.items()}
    layout = _file_layout(fits, file)
    out: dict[str, RecordLabels | None] = dict.fromkeys(records)
    for rec, attrs in labelled.items():
        ok = [lay for lay in LAYOUTS if fits[rec][lay] is None]
        lay = ok[0] if len(ok) == 1 else layout
        if lay is None:
            # every answer has as many claims as the question has answers: the two layouts
            # index different labels and nothing in the file says which one was written
            raise DataError(f"the labels fit both FiSCo layouts ({len(attrs)} answers, each with {len(attrs)} "
                            "claims) and no other record tells which", file=file, key=f"record {rec}", hint=HINT)
        out[rec] = RecordLabels(layout=lay, rows=_normalised(attrs, file, rec))
    return out


__all__ = ["GROUP_FIELDS", "LABELS", "VOCABULARY", "EntryKeys", "RecordLabels", "claim_text", "group_field",
           "Level", "identity", "label", "layout_mismatch", "recorded_claims", "recorded_labels", "resolve_entries"]
