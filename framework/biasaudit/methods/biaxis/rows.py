"""BiAxisAudit's per-response values as columns (issue 42): one numpy array per field,
one entry per answered unit in unit order, instead of one object per response.

A row used to be a dataclass with its own `__dict__` and a copy of the judges' votes
(about 1 KB a response at 10^5 responses); here it is about 25 bytes over the arrays.
Cells and statements are stored as integer codes numbered in the sorted order of their
ids, so every statistic that orders clusters or cells by their text (np.unique, sorted)
sees them in the same order from the codes (numbers stay identical). The judges' votes
are kept once per distinct vote (a panel's votes take few distinct values) and a row
holds the index of its own.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from biasaudit.methods.biaxis.ber import ABSTAIN
from biasaudit.records.codes import Code

SOURCES = ("none", "rules", "parser", "unparsed")
"""Where a row's selection label came from (`Rows.source` indexes this)."""
NO_SELECTION = 0
"""`Rows.sel` code of a row without a selection layer (free text: A = 0)."""


@dataclass(frozen=True, slots=True)
class Rows:
    """The answered units (see the module text); `mask` views keep the columns aligned."""

    cell_ids: tuple[str, ...]
    """Cell id by code, sorted."""
    cell_levels: tuple[Mapping[str, str], ...]
    """The factor levels of each cell code."""
    stimulus_ids: tuple[str, ...]
    """Statement id by code, sorted."""
    labels: tuple[str | None, ...]
    """Label by code for `sel` and `elab` (code 0: None, no selection layer)."""
    votes: tuple[Mapping[str, str | None], ...]
    """The distinct judges' votes, in the order rows first show them."""
    cell: np.ndarray
    stimulus: np.ndarray
    tokens: np.ndarray
    """Output tokens (int64, as a list of ints becomes in numpy)."""
    sel: np.ndarray
    source: np.ndarray
    elab: np.ndarray
    vote: np.ndarray
    a: np.ndarray
    """1.0 where the selection label endorses."""
    b: np.ndarray
    """1.0 where the elaboration label endorses."""

    def __len__(self) -> int:
        return int(self.cell.size)

    def mask(self, keep: np.ndarray) -> Rows:
        """The rows where `keep` is true, in order (the names are shared)."""
        return Rows(self.cell_ids, self.cell_levels, self.stimulus_ids, self.labels, self.votes,
                    self.cell[keep], self.stimulus[keep], self.tokens[keep], self.sel[keep], self.source[keep],
                    self.elab[keep], self.vote[keep], self.a[keep], self.b[keep])

    def code_of(self, label: str | None) -> int:
        """The code of a label (-1: no row has it)."""
        return self.labels.index(label) if label in self.labels else -1

    def eligible(self) -> np.ndarray:
        """Neither layer abstained."""
        abstain = self.code_of(ABSTAIN)
        out: np.ndarray = (self.sel != abstain) & (self.elab != abstain)
        return out

    def union(self) -> np.ndarray:
        """BER_union's per-response value: endorsement on either layer."""
        out: np.ndarray = self.a + self.b - self.a * self.b
        return out

    def levels_of(self, factor: str) -> list[str | None]:
        """Each row's level of `factor` (None: its cell does not set it)."""
        per_cell = [lv.get(factor) for lv in self.cell_levels]
        return [per_cell[i] for i in self.cell.tolist()]


def selection(code: Code | None) -> tuple[str | None, str]:
    """(label, source) the way the BER reads it."""
    if code is None or code.status == "not_applicable":
        return None, "none"  # free text: no selection layer, A = 0
    if code.coded:
        return code.label, "parser" if code.source.startswith("fallback:") else "rules"
    return ABSTAIN, "unparsed"


class RowsBuilder:
    """Appends one response at a time into compact arrays; `build` sorts the codes."""

    def __init__(self) -> None:
        self._cells: dict[str, int] = {}
        self._levels: list[Mapping[str, str]] = []
        self._stimuli: dict[str, int] = {}
        self._labels: dict[str | None, int] = {None: NO_SELECTION}
        self._votes: dict[tuple[tuple[str, str | None], ...], int] = {}
        self._vote_maps: list[Mapping[str, str | None]] = []
        self._sources = {s: i for i, s in enumerate(SOURCES)}
        self.cell, self.stimulus, self.vote = array("i"), array("i"), array("i")
        self.tokens = array("q")
        self.sel, self.source, self.elab = array("b"), array("b"), array("b")
        self.a, self.b = array("b"), array("b")

    def _label(self, label: str | None) -> int:
        code = self._labels.get(label)
        if code is None:
            code = self._labels[label] = len(self._labels)
            if code > 127:
                raise ValueError("more than 127 distinct labels in a BiAxisAudit layer")
        return code

    def add(self, cell: str, levels: Mapping[str, str], stimulus: str, tokens: int, sel: str | None, source: str,
            elab: str, votes: Mapping[str, str | None], a: bool, b: bool) -> None:
        c = self._cells.get(cell)
        if c is None:
            c = self._cells[cell] = len(self._cells)
            self._levels.append(levels)
        s = self._stimuli.setdefault(stimulus, len(self._stimuli))
        key = tuple(votes.items())
        v = self._votes.get(key)
        if v is None:
            v = self._votes[key] = len(self._vote_maps)
            self._vote_maps.append(dict(votes))
        self.cell.append(c)
        self.stimulus.append(s)
        self.vote.append(v)
        self.tokens.append(tokens)
        self.sel.append(self._label(sel))
        self.source.append(self._sources[source])
        self.elab.append(self._label(elab))
        self.a.append(a)
        self.b.append(b)

    def build(self) -> Rows:
        cell_ids, cell_code = _sorted_codes(self._cells, np.frombuffer(self.cell, dtype=np.int32))
        stim_ids, stim_code = _sorted_codes(self._stimuli, np.frombuffer(self.stimulus, dtype=np.int32))
        labels: list[str | None] = [None] * len(self._labels)
        for lab, code in self._labels.items():
            labels[code] = lab
        return Rows(
            cell_ids=tuple(cell_ids), cell_levels=tuple(self._levels[self._cells[c]] for c in cell_ids),
            stimulus_ids=tuple(stim_ids), labels=tuple(labels), votes=tuple(self._vote_maps),
            cell=cell_code, stimulus=stim_code, tokens=np.array(self.tokens, dtype=np.int64),
            sel=np.array(self.sel, dtype=np.int8), source=np.array(self.source, dtype=np.int8),
            elab=np.array(self.elab, dtype=np.int8), vote=np.array(self.vote, dtype=np.int32),
            a=np.array(self.a, dtype=np.float64), b=np.array(self.b, dtype=np.float64))


def _sorted_codes(first_seen: Mapping[str, int], codes: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Renumber first-seen codes in the sorted order of their ids."""
    ids = sorted(first_seen)
    rank = np.empty(len(ids), dtype=np.int32)
    for new, name in enumerate(ids):
        rank[first_seen[name]] = new
    return ids, rank[codes] if codes.size else codes.astype(np.int32)


__all__ = ["NO_SELECTION", "SOURCES", "Rows", "RowsBuilder", "selection"]
