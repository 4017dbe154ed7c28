"""What a coding layer reads and says: the unit (one answered plan item) and its code. Data only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from biasaudit.records.json import JSONObject, JSONValue

ABSTAIN = "Abstain"
"""The label shown for a unit a layer could not code."""


CodeStatus = Literal["coded", "abstain", "not_applicable", "failed"]
"""`coded`: a label or value; `abstain`: the coder ran and could not decide (no rule
fired, no judge majority); `not_applicable`: the layer does not apply to this unit (a
task without a selection layer, an answer too short to compare); `failed`: the subject's
response or a coding request failed."""


@dataclass(frozen=True)
class Unit:
    """One answered plan item: what a layer codes."""

    id: str
    cell: str
    stimulus: str
    slot: str
    variant: int
    sample: int
    key: str
    """The subject request's key (its response is `responses[key]`)."""
    levels: Mapping[str, str]
    """Factor -> level of the unit's cell."""
    fields: Mapping[str, JSONValue]
    """The stimulus's fields (the dataset's own columns: JSON values)."""
    vars: Mapping[str, JSONValue]
    """Variables the cell's levels set."""

    def context(self, **extra: JSONValue) -> JSONObject:
        """Template variables for rubrics and prompts: stimulus fields, level vars, levels."""
        levels: JSONObject = dict(self.levels)
        return {**self.fields, **self.vars, "levels": levels, "stimulus_id": self.stimulus, **extra}


class ChoiceAsked(BaseModel):
    """One order a `choice` question was asked in, and the option the model chose."""

    model_config = ConfigDict(frozen=True)
    order: list[str]
    choice: str


class Truncation(BaseModel):
    """An input cut to `runtime.limits.max_coding_chars` before the coder read it."""

    model_config = ConfigDict(frozen=True)
    chars: int
    """The input's full length."""
    kept: int
    """The characters the coder read."""


class CodeDetail(BaseModel):
    """A coder's evidence for one code: what it matched, what each judge said, which
    claims it checked, or why it could not code. Each coder sets the fields of its own
    kind and leaves the rest unset.

    Serialised (codes.jsonl, the viewer, the evidence pack) as the fields a coder set and
    nothing else, in the order declared here, so a line reads as it did when `detail` was
    a plain mapping: `{"span": [0, 3], "token": "A", "rule": 1}`, `{"votes": {...}}`,
    `{}`. The declaration order is the order every coder wrote its keys in (`reason`
    after the human coder's fields, `input_truncated`, added by the coding stage, last);
    a field explicitly set to null (`stratify` of an unstratified sheet) is kept. An unknown
    key is refused: a line this version did not write (records/upgrade/codes.py reads the
    older layouts)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # rules
    span: tuple[int, int] | None = None
    """The character span the rule matched (a later layer's `strip` removes it)."""
    token: str | None = None
    """The text the rule read the label from (its first group, or the whole match)."""
    rule: int | Literal["otherwise"] | None = None
    """The index of the rule that fired among the rules of the unit's level, or
    `otherwise` when none did and the layer's `otherwise` label was given."""
    # judge_panel
    votes: dict[str, str | None] | None = None
    """Judge name -> its label (None: its answer could not be read)."""
    # choice, classifier
    asked: list[ChoiceAsked] | None = None
    """`choice`: each option order asked, and the option chosen."""
    top: str | None = None
    """`classifier`: the model's most probable label (before the layer's label map)."""
    probs: dict[str, float] | None = None
    """Option (choice: mean over the orders asked) or model label (classifier) ->
    probability."""
    flipped: bool | None = None
    """`choice`: the chosen option changed with the option order."""
    picked_first: list[bool] | None = None
    """`choice`: per order asked, whether the option listed first was chosen."""
    n_options: int | None = None
    """`choice`: the number of options."""
    # claims
    claims: list[str] | None = None
    """The unit's claims (extracted, or as recorded)."""
    fell_back: bool | None = None
    """The LLM's claim list did not parse and the sentence splitter gave the claims."""
    checks: dict[str, list[str | None]] | None = None
    """Reference -> the NLI label (E, N, C; None: the check failed) of each claim."""
    recorded: bool | None = None
    """The checks are the published labels (`extract: recorded`), not model calls."""
    # embedding
    similarity: dict[str, float] | None = None
    """Other unit of the same stimulus -> cosine similarity of the two inputs."""
    # embedding vectors (TFDP's tfdp_vectors)
    predictions: list[tuple[str | None, float]] | None = None
    """The answer's predicted words (None: unreadable) and their weights."""
    vectors: dict[str, list[float]] | None = None
    """Text -> its embedding (kept in the store, left out of codes.jsonl)."""
    # human
    stratum: str | None = None
    """The stratum the unit belongs to on the annotation sheet's sampling design."""
    sampled: bool | None = None
    """The unit was drawn for human review."""
    sampled_from: str | None = None
    """The layer the sheet's sample was drawn from."""
    stratify: str | None = None
    """What the sample was stratified by (null: not stratified)."""
    chosen: bool | None = None
    """The unit was chosen by a reviewer in the viewer, not drawn at random (the sheet's
    `selection` is `chosen`): a convenience sample."""
    note: str | None = None
    """The annotator's note."""
    # any coder
    reason: str | None = None
    """Why the unit was not coded (not applicable, abstained or failed)."""
    input_truncated: Truncation | None = None
    """The input was cut before the coder read it (set by the coding stage)."""

    @model_serializer(mode="wrap")
    def _set_fields_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # (the return type tells pydantic how to serialise what this returns: `object`
        # leaves the handler's values as they are, python tuples included)
        out: dict[str, object] = handler(self)
        return {k: v for k, v in out.items() if k in self.model_fields_set}

    def has(self, name: str) -> bool:
        """The coder set this field (even to null), or the file read had this key."""
        return name in self.model_fields_set


class Code(BaseModel):
    """What a layer says about one unit."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    unit: str
    status: CodeStatus
    label: str | None = None
    """A label of the layer's label set (status `coded`, label layers)."""
    value: float | None = None
    """A number (status `coded`, value layers such as similarities or mean ratings)."""
    text: str | None = None
    """The text the layer read after its own preprocessing (masking), when later layers
    take this layer as their input."""
    source: str = ""
    """Which coder gave the code (`rules`, `fallback:<layer>`...)."""
    detail: CodeDetail = Field(default_factory=CodeDetail)
    """Coder-specific evidence: the matched span, each judge's vote, the checked claims."""

    @property
    def coded(self) -> bool:
        return self.status == "coded"
