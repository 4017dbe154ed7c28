"""The records of the coding stage and the protocol every coder follows.

A `Unit` is one answered plan item; a layer's coder plans `CodingRequest`s (model calls
it needs, each naming a route: which configured model answers it) and turns the answers
into one `Code` per unit. Coders never call a model themselves: the stage hashes, caches
and answers their requests, so a coder is a pure function of its inputs and answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from biasaudit.plan import Decoding
from biasaudit.records.codes import ABSTAIN, Code, CodeDetail, CodeStatus, Unit
from biasaudit.records.coding import PanelReport, PositionReport
from biasaudit.records.json import JSONObject
from biasaudit.records.metric_result import ValidityFlag
from biasaudit.records.responses import Response
from biasaudit.spec import AuditConfig, CodingLayerSpec, ValiditySpec


@dataclass(frozen=True)
class CodingRequest:
    """A model call a coder needs. Hashable: identical requests from different units
    are answered once."""

    route: str
    """Who answers: `subject` (the model under test), `judge:<name>` (a judge of the
    `judge` group), `nli_chat` (the `nli` group's chat model, or the subject), `nli` (the
    `nli` group), `classifier` (the `nli` group's model as a text classifier), `embedder`
    (the `embedder` group)."""
    kind: str
    """Request kind: `choice`, `generate`, `classify_nli`, `classify` or `embed`."""
    text: str | None = None
    """Raw text (NLI premise, classifier input, text to embed)."""
    user: str | None = None
    """The user message of a chat request."""
    params: str = "{}"
    """Decoding parameters as canonical JSON (hashable)."""
    text_pair: str | None = None
    """NLI hypothesis."""

    @classmethod
    def chat(cls, route: str, kind: str, user: str, params: Mapping[str, Any]) -> CodingRequest:
        return cls(route=route, kind=kind, user=user, params=json.dumps(dict(params), sort_keys=True))

    def params_dict(self) -> JSONObject:
        out: JSONObject = json.loads(self.params)
        return out

    def decoding(self) -> Decoding:
        """The parameters as a backend reads them (the answer words of a `choice`...)."""
        return Decoding.model_validate_json(self.params)


Answers = Mapping[CodingRequest, Response]


class Coder(Protocol):
    """Codes the units of one layer. `plan` is called until it asks for nothing that is
    not yet answered (multi-step coders ask in rounds); then `code` gives one Code per
    unit. `inputs` holds each unit's input text (only units that have one are passed)."""

    def plan(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[CodingRequest]: ...

    def code(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[Code]: ...


@dataclass(frozen=True)
class CoderEnv:
    """What a coder may read when it is checked and built."""

    layer: str
    spec: CodingLayerSpec
    config: AuditConfig
    spec_file: str | None
    variables: frozenset[str]
    """Names templates can read: stimulus fields, level vars, `levels`, `stimulus_id`."""

    def key(self, option: str) -> str:
        return f"coding.{self.layer}.{option}"

    def check_levels(self, by: str, levels: Iterable[str]) -> None:
        """`by` is a factor of the spec and every name in `levels` one of its levels."""
        from biasaudit.errors import SpecError

        factors = self.config.factors
        if by not in factors:
            raise SpecError(f"`by` names factor {by!r}, which the spec does not have", file=self.spec_file,
                            key=self.key("by"), hint=f"factors: {', '.join(factors) or '(none)'}")
        for name in levels:
            if name not in factors[by]:
                raise SpecError(f"factor {by!r} has no level {name!r}", file=self.spec_file,
                                key=self.key(f"levels.{name}"), hint=f"levels: {', '.join(factors[by])}")


@dataclass(frozen=True)
class CallEstimate:
    """How many coding calls a layer will make, known before any response exists."""

    calls: int | None
    """None: it depends on the responses (e.g. how many claims they make)."""
    bound: Literal["exact", "at most", "unknown"] = "exact"
    note: str = ""
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class CoderDef:
    """A registered coder: its options model, its evidence record and how to build it.
    Core code reads what a coder is only from here (the capabilities and hooks below),
    never from its name."""

    options: type[BaseModel]
    """Validates the layer's coder-specific keys (extra keys are errors)."""
    build: Callable[[CoderEnv, Any], Coder]
    title: str
    evidence: type[CodeDetail] = CodeDetail
    """The record of the coder's evidence for one code (`Code.detail`): a subclass of
    `CodeDetail` that refuses unknown keys. A stored code is read back into it."""
    routes: Callable[[CoderEnv, Any], list[tuple[str, str]]] = field(default=lambda env, o: [])
    """(route, request kind) pairs the layer will use, checked against the config."""
    labels: Callable[[CoderEnv, Any], list[str] | None] = field(default=lambda env, o: None)
    """The label set the options imply (None: the layer must declare `labels`)."""
    check: Callable[[CoderEnv, Any], None] | None = None
    """Further checks of the options against the config; raises SpecError."""
    estimate: Callable[[CoderEnv, Any, int], CallEstimate] = field(
        default=lambda env, o, n: CallEstimate(calls=0))
    """Coding calls for `n` units, before any response exists."""
    value_type: Callable[[CoderEnv, Any], Literal["label", "number"]] = field(default=lambda env, o: "label")
    """Whether the layer gives labels or numbers."""
    is_human: bool = False
    """The layer's labels are people's (an annotation sheet): a reliability pair with one
    such layer is a gold report, and the viewer's review does not re-label it."""
    check_plan: Callable[[CoderEnv, Any, Mapping[str, str]], None] | None = None
    """Checked when a run is prepared, before any model call, with unit id -> request
    key of the plan (a human sheet drawn from another run is refused); raises."""
    reliability: Callable[[str, Any, Sequence[Unit], Mapping[str, Code], int],
                          list[PanelReport | PositionReport]] | None = None
    """The layer's own reliability reports (layer name, options, its units, its codes,
    seed): the agreement of a panel's raters, the option-order effect of a choice."""
    validity: Callable[[CoderEnv, Any, Sequence[Code], ValiditySpec], list[ValidityFlag]] | None = None
    """Validity flags only this coder can raise, from the layer's coded units (the rules'
    `otherwise` share)."""
    per_unit: bool = False
    """`code` gives each unit's code from that unit's input and the answers alone (no
    unit's code depends on another unit): the stage may then ask for the codes a chunk of
    units at a time and keep each chunk compactly before the next (issue 42), instead of
    holding every unit's full record at once. A coder that compares units (embedding
    similarity within a stimulus, claims against references, a human sheet checked
    whole) leaves it False."""
    chunk_by: Callable[[Any], Callable[[Unit], str]] | None = None
    """For a coder that compares units only within a group (embedding similarity within
    a stimulus): options -> each unit's group. The stage then asks for the codes of whole
    groups a chunk at a time (at least `CODE_CHUNK` units, never a group split), as it
    does a per-unit coder's, instead of the whole layer at once. None: `per_unit` decides."""


@dataclass
class LayerCalls:
    """Coding requests of one layer in a run, and where their answers came from."""

    requests: int = 0
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0


__all__ = [
    "ABSTAIN",
    "Answers",
    "CallEstimate",
    "Code",
    "CodeDetail",
    "CodeStatus",
    "Coder",
    "CoderDef",
    "CoderEnv",
    "CodingRequest",
    "LayerCalls",
    "Unit",
]
