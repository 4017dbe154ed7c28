"""The sampling record of a human-review annotation sheet (`<sheet>.sample.json`): what
`biasaudit annotate export` (or the viewer's review) put on the sheet, which the `human`
coder checks the filled sheet against. How the sheet is read and checked is
coding/human_sheet.py; earlier layouts are read through records/upgrade/annotation_sample.py."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from biasaudit.records.upgrade import validated
from biasaudit.records.upgrade.annotation_sample import CURRENT

FORMAT: Literal["biasaudit-annotation-sheet/1"] = "biasaudit-annotation-sheet/1"
"""The kind of file (unchanged since the first export: the layout's version is
`format_version`)."""
FORMAT_VERSION: int = CURRENT


class SampledUnit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    key: str
    """The subject request's key: the sheet's answer is this request's."""
    stratum: str
    answer_sha256: str
    """sha256 of the exact answer text (`coding.human_sheet.answer_hash`)."""
    shown_sha256: str | None = None
    """`shown_hash` of the answer shown (null only in a record with `exact_answers`)."""
    prompt_sha256: str | None = None
    """`shown_hash` of the prompt shown (null only in a record with `exact_answers`)."""


class SampleRecord(BaseModel):
    """What `annotate export` sampled (`<sheet>.sample.json`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    format_version: int = Field(ge=FORMAT_VERSION, le=FORMAT_VERSION)
    """The file's layout: the record holds only the current one; an earlier file (no key:
    version 1) is read through records/upgrade/annotation_sample.py."""
    format: Literal["biasaudit-annotation-sheet/1"] = FORMAT
    run_id: str
    run_dir: str
    spec_sha256: str
    layer: str
    """The coding layer whose units were sampled (and whose codes `--with-codes` shows)."""
    labels: list[str]
    stratify: str | None
    """Cell, factor or stimulus field the sample is stratified by (None: simple random)."""
    seed: int | None
    """The seed of the draw (None: not drawn; `selection` is `chosen`)."""
    requested: int
    population: dict[str, int]
    """Stratum -> units the layer coded (the units a sample is drawn from)."""
    sampled: dict[str, int]
    """Stratum -> units sampled."""
    with_codes: bool = False
    exact_answers: bool = False
    """True only for a format-1 record without the hashes of the text as shown (set by
    its upgrade): the sheet's answer cells must then match `answer_sha256` exactly, and
    its prompt cells are not checked. biasaudit writes false."""
    units: list[SampledUnit] = Field(default_factory=list)
    """One per row of the sheet (validated after `exact_answers`, which says whether each
    must have the hashes of the text as shown)."""
    selection: Literal["random", "chosen"] = "random"
    """How the units came onto the sheet: `random`, drawn by `annotate export` (seeded,
    stratified: a probability sample, which the PPI estimate and the humans-only rates
    need); `chosen`, picked by a reviewer in the viewer (`biasaudit view`: a convenience
    sample, whatever caught the reviewer's eye, so agreement is reported on it but no
    rate over all units is estimated from it)."""

    @field_validator("units")
    @classmethod
    def _hashes_present(cls, units: list[SampledUnit], info: ValidationInfo) -> list[SampledUnit]:
        if not info.data.get("exact_answers", False):
            for i, u in enumerate(units):
                if u.shown_sha256 is None or u.prompt_sha256 is None:
                    which = "shown_sha256" if u.shown_sha256 is None else "prompt_sha256"
                    raise ValueError(f"unit {i} has no {which} (a format-2 record needs it)")
        return units

    @classmethod
    def read_raw(cls, raw: Any, *, file: str, **kw: Any) -> SampleRecord:
        """A sampling record as read (any earlier version, upgraded); one error naming the
        file and key for anything else (`records.upgrade.validated`)."""
        return validated("annotation_sample", cls, raw, file=file, name="the sampling record", **kw)[0]


__all__ = ["FORMAT", "FORMAT_VERSION", "SampleRecord", "SampledUnit"]
