"""FiSCo's published `claims.json` / `labels.json`, read by the `claims` coder
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

A name may appear several times in `other_attributes`: each occurrence is one more
recorded answer (a sample); the unit with sample k takes the k-th occurrence of its name
(as the replay backend answers it), so no recorded answer is dropped.
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


def entry_index(unit: Unit, attributes: Sequence[JSONValue], var: str) -> int | None:
    """The position in `other_attributes` of the answer this unit stands for: the
    (sample)-th entry whose name (or age) is the unit's value of `var` (an entry that is
    no object names nobody)."""
    value = str(unit.vars.get(var, ""))
    hits = [i for i, a in enumerate(attributes)
            if isinstance(a, dict) and str(a.get("name") or a.get("age") or "") == value]
    if not hits:
        return None
    return hits[unit.sample % len(hits)]


def recorded_claims(unit: Unit, field: str, var: str) -> tuple[int | None, list[str], Any]:
    """(entry index, claims, labels or None) of a unit from its stimulus's recorded field."""
    attrs = unit.fields.get(field)
    if not isinstance(attrs, list):
        return None, [], None
    i = entry_index(unit, attrs, var)
    entry = attrs[i] if i is not None else None
    if i is None or not isinstance(entry, dict):
        return None, [], None
    claims = [claim_text(c) for c in _claims_of(entry)]
    return i, claims, entry.get("labels")


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


__all__ = ["LABELS", "VOCABULARY", "RecordLabels", "claim_text", "entry_index", "label", "layout_mismatch",
           "recorded_claims", "recorded_labels"]
