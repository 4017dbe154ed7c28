"""A compiled plan's items held as columns (issue 42).

A list of `PlanItem` tuples cost about 218 bytes an item on the paper-scale grid (a
6-field tuple, 96 B; its key as a fresh 64-character string, 113 B; the list's slot),
held from the plan stage to the end of the run: about 220 MB at 10^6 requests.
`ItemTable` keeps the same items as integer columns: the cell, stimulus and slot as
positions in their vocabularies (each distinct string held once), the variant and the
sample, and the key as the position of its request in the plan's `RequestTable`
(which holds every key once, as its raw digest). About 10 bytes an item once packed.

It is a `Sequence[PlanItem]`: indexing, iterating, `len` and `==` (with a list of the
same items) behave as the list did, and each access builds a `PlanItem` equal to the
one the list held (same field values and types). A loop over every item that needs
only some fields reads them as columns instead (`item_keys`, `ItemTable.codes`)."""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterator, Sequence
from typing import Literal, overload

import numpy as np
import numpy.typing as npt

from biasaudit.plan.requests import PlanItem, RequestTable

Field = Literal["cell", "stimulus", "slot"]
Number = Literal["variant", "sample"]
_STRINGS: tuple[Field, ...] = ("cell", "stimulus", "slot")
_CHUNK = 4096
"""Items decoded together when iterating: each column slice is converted to Python
values in one call (`tolist`), not one numpy scalar at a time."""


def _narrow(values: array[int]) -> npt.NDArray[np.integer]:
    """`values` in the smallest integer type that holds them."""
    out = np.frombuffer(values, dtype=np.int64) if len(values) else np.zeros(0, dtype=np.int64)
    if len(out) and int(out.min()) >= 0:
        top = int(out.max())
        for dt in (np.uint8, np.uint16, np.uint32):
            if top <= np.iinfo(dt).max:
                return out.astype(dt)
    return out.copy()


class ItemTable(Sequence[PlanItem]):
    """The items of one compiled plan, in plan order, as columns (see the module doc).
    Built by `append` while the plan compiles, then `pack`ed (read-only from then on)."""

    __slots__ = ("_requests", "_vocab", "_ids", "_build", "_cols", "_views", "_n")

    def __init__(self, requests: RequestTable) -> None:
        self._requests = requests
        self._vocab: dict[Field, list[str]] = {f: [] for f in _STRINGS}
        self._ids: dict[Field, dict[str, int]] = {f: {} for f in _STRINGS}
        self._build: list[array[int]] | None = [array("q") for _ in range(6)]
        self._cols: tuple[npt.NDArray[np.integer], ...] = ()
        # the columns as memoryviews: one item's fields read as Python ints (a numpy
        # scalar read and its int() were most of the cost of a lookup by position)
        self._views: tuple[memoryview, ...] = ()
        self._n = 0

    def _id(self, f: Field, s: str) -> int:
        ids = self._ids[f]
        at = ids.get(s)
        if at is None:
            at = ids[s] = len(ids)
            self._vocab[f].append(s)
        return at

    def append(self, cell: str, stimulus: str, slot: str, variant: int, sample: int, at: int) -> None:
        """Add an item whose request sits at position `at` of the table (`RequestTable.add_parts`)."""
        cols = self._build
        if cols is None:
            raise RuntimeError("the item table is packed: items are added while the plan compiles")
        for col, v in zip(cols, (self._id("cell", cell), self._id("stimulus", stimulus), self._id("slot", slot),
                                 variant, sample, at), strict=True):
            col.append(v)
        self._n += 1

    def pack(self) -> None:
        """Narrow each column to the smallest integer type and drop the build state."""
        if self._build is None:
            return
        self._cols = tuple(_narrow(c) for c in self._build)
        self._views = tuple(memoryview(c.data) for c in self._cols)
        self._build = None
        self._ids = {f: {} for f in _STRINGS}

    def _columns(self) -> tuple[npt.NDArray[np.integer], ...]:
        if self._build is not None:  # read before packing (a plan being compiled): pack first
            self.pack()
        return self._cols

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> PlanItem: ...

    @overload
    def __getitem__(self, i: slice) -> list[PlanItem]: ...

    def __getitem__(self, i: int | slice) -> PlanItem | list[PlanItem]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        j = operator.index(i)
        if j < 0:
            j += self._n
        if not 0 <= j < self._n:
            raise IndexError("plan item index out of range")
        cell, stimulus, slot, variant, sample = self.parts_at(j)
        return tuple.__new__(PlanItem, (cell, stimulus, slot, variant, sample,
                                        self._requests.key_at(self._views[5][j])))

    def parts_at(self, j: int) -> tuple[str, str, str, int, int]:
        """Item `j`'s cell, stimulus, slot, variant and sample, without its key (a unit's
        id is made of these: building the key's text was half the cost of a lookup)."""
        if self._build is not None:
            self.pack()
        m, voc = self._views, self._vocab
        return (voc["cell"][m[0][j]], voc["stimulus"][m[1][j]], voc["slot"][m[2][j]], int(m[3][j]), int(m[4][j]))

    def __iter__(self) -> Iterator[PlanItem]:
        cols = self._columns()
        cells, stimuli, slots = (self._vocab[f].__getitem__ for f in _STRINGS)
        keys_at = self._requests.keys_at
        new = tuple.__new__
        for start in range(0, self._n, _CHUNK):
            c, s, sl, v, sa = (col[start:start + _CHUNK].tolist() for col in cols[:5])
            keys = keys_at(cols[5][start:start + _CHUNK])
            for row in zip(map(cells, c), map(stimuli, s), map(slots, sl), v, sa, keys, strict=True):
                yield new(PlanItem, row)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ItemTable({self._n} items)"

    # column accessors: a loop over every item that reads a few fields
    def vocabulary(self, f: Field) -> list[str]:
        """The distinct values of a string field, in order of first appearance."""
        return list(self._vocab[f])

    def codes(self, f: Field | Number) -> npt.NDArray[np.integer]:
        """A field for every item, in plan order: a position in `vocabulary(f)` for the
        string fields, the number itself for `variant` and `sample` (read-only view)."""
        col = self._columns()[("cell", "stimulus", "slot", "variant", "sample").index(f)]
        view = col.view()
        view.flags.writeable = False
        return view

    def keys(self) -> Iterator[str]:
        """Each item's request key, in plan order (no `PlanItem` built)."""
        at = self._columns()[5]
        for start in range(0, self._n, _CHUNK):
            yield from self._requests.keys_at(at[start:start + _CHUNK])


def string_codes(items: Sequence[PlanItem], f: Field) -> tuple[list[str], npt.NDArray[np.integer]]:
    """(the distinct values of field `f` in order of first appearance, each item's
    position in them): the column of an `ItemTable`, interned from a list otherwise."""
    if isinstance(items, ItemTable):
        return items.vocabulary(f), items.codes(f)
    ids: dict[str, int] = {}
    codes = np.fromiter((ids.setdefault(getattr(it, f), len(ids)) for it in items), dtype=np.int64, count=len(items))
    return list(ids), codes


def item_keys(items: Sequence[PlanItem]) -> Iterator[str]:
    """The request key of each item, in order: read from the key column of an
    `ItemTable`, from each item otherwise (a plan whose items were filtered into a list)."""
    if isinstance(items, ItemTable):
        return items.keys()
    return (it.key for it in items)


__all__ = ["ItemTable", "item_keys", "string_codes"]
