"""Row labels (clusters, cells, groups) as integer codes, for estimators over many rows.

The clustered estimators group rows by the text of their labels, in sorted order
(`np.unique` of the labels as str), and sum per group in that order. A caller holding a
million rows passes `Codes` instead: each row's label as an index into `names`, the names
sorted, so the groups come out in the same order from the integers as from the text (the
same sums in the same order: the same numbers, bit for bit) without one string per row
(issue 42).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Codes:
    """Row i's label is `names[codes[i]]`; `names` sorted, distinct."""

    codes: np.ndarray
    names: Sequence[str]

    def __post_init__(self) -> None:
        if any(a >= b for a, b in zip(self.names, self.names[1:], strict=False)):
            raise ValueError("Codes.names must be sorted and distinct (the codes stand for their order)")

    def __len__(self) -> int:
        return int(self.codes.size)

    def labels(self) -> list[str]:
        """Each row's label (one reference per row to the shared names)."""
        return [self.names[i] for i in self.codes.tolist()]


def group_index(labels: Codes | Sequence[object] | np.ndarray) -> tuple[int, np.ndarray]:
    """(groups, each row's group index), groups in the sorted order of the labels' text."""
    if isinstance(labels, Codes):
        uniq, inverse = np.unique(labels.codes, return_inverse=True)
    else:
        uniq, inverse = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    return len(uniq), inverse.ravel()


__all__ = ["Codes", "group_index"]
