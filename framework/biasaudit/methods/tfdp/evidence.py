"""TFDP's evidence for one code of its `tfdp_vectors` layer (`Code.detail`): what the
answer predicted, and the embeddings the `tfdp` metric aligns and scores."""

from __future__ import annotations

from typing import ClassVar

from biasaudit.records.codes import CodeDetail


class TFDPVectorsEvidence(CodeDetail):
    """The answer's predicted words and the embeddings TFDP's alignment scores."""

    trail_exclude: ClassVar[frozenset[str]] = frozenset({"vectors"})

    predictions: list[tuple[str | None, float]] | None = None
    """The answer's predicted words (None: unreadable) and their weights."""
    vectors: dict[str, list[float]] | None = None
    """Text -> its embedding (kept in memory for the metric, left out of codes.jsonl)."""


__all__ = ["TFDPVectorsEvidence"]
