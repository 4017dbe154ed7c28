"""What a model answered: the stored `Response` record, and one typed output record per
request kind, so stages after execution read fields, not string keys of a dict.

The store keeps `Response.output` as a JSON object, exactly what the backend gave (so a
cache, a responses.jsonl and an evidence pack keep their bytes across versions);
`parse_output(Record, response)` / `output_as(kind, response)` parse it into the record
of its kind, checking it on the way. Stages read outputs only through those records.

Why not a union of the output records in the field itself: a response does not carry its
request's kind (the store's rows and old responses.jsonl lines have only the output), the
shapes overlap (a choice's output is also a valid classification; an NLI output too), and
dumping a parsed record would not give back the stored bytes (defaults filled in, an
integer log-prob turned into a float), which the cache, responses.jsonl and an evidence
pack's verification compare.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, TypeAdapter

from biasaudit.records.construct import rebuilt
from biasaudit.records.json import JSONObject, JSONValue


def _json_object(value: object) -> JSONObject | None:
    # A shallow check (an object with string keys, copied), not pydantic's JSON validation
    # of every value: that costs ~75 us for a 768-float embedding, ten times what reading
    # it as `EmbeddingOutput` costs, and every reader parses the output into its record
    # anyway. The store writes it through canonical JSON, which refuses anything else.
    if value is None:
        return None
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return dict(value)
    raise ValueError("an output is a JSON object (string keys) or null")


def _as_is(value: JSONObject | None) -> object:
    return value  # dumped as given, as the untyped field was: no warning for a backend's tuple


StoredOutput = Annotated[JSONObject | None, PlainValidator(_json_object), PlainSerializer(_as_is)]


class Response(BaseModel):
    model_config = ConfigDict(frozen=True)
    key: str
    status: Literal["ok", "failed"]
    output: StoredOutput = None
    """The output as the backend gave it (JSON); read it through `parse_output` / `output_as`."""
    error: str | None = None
    """Short failure reason (timeout, HTTP status, malformed output...); never secrets."""
    error_kind: str | None = None
    """Why it failed, for counting: rate_limited, server_error, connection, timeout,
    malformed, empty, content_filter, bad_logprobs, http_error (HTTP backends), or None."""
    latency_s: float = 0.0
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.output is not None

    def field(self, name: str) -> JSONValue | None:
        """The output's field `name` as stored (None when absent or failed): for what no
        output record names in advance, a spec's `response.<field>` coding input."""
        return None if self.output is None else self.output.get(name)


_ResponseRow = tuple[Literal["ok", "failed"], JSONObject | None, str | None, str | None, float, int, frozenset[str]]


class ResponseTable(Mapping[str, Response]):
    """Key -> response of a run, held as one tuple per response instead of one pydantic
    record (issue 42: the record's `__dict__` and fields set cost about 500 bytes a
    response, which a run held for every request until its report was written). Reading
    a key gives a `Response` equal to the one added, built on each access (its `output` is
    the object added: responses are frozen, nobody writes to it); iteration is in the
    order added, as a dict's. A response keyed apart from its own key is kept whole."""

    __slots__ = ("_rows", "_sets")

    def __init__(self, responses: Mapping[str, Response] | None = None) -> None:
        self._rows: dict[str, _ResponseRow | Response] = {}
        self._sets: dict[frozenset[str], frozenset[str]] = {}
        for k, r in (responses or {}).items():
            self[k] = r

    def __setitem__(self, key: str, response: Response) -> None:
        if response.key != key:
            self._rows[key] = response
            return
        d = response.__dict__
        fs = frozenset(response.model_fields_set)
        self._rows[key] = (d["status"], d["output"], d["error"], d["error_kind"], d["latency_s"], d["attempts"],
                           self._sets.setdefault(fs, fs))

    def __getitem__(self, key: str) -> Response:
        row = self._rows[key]
        if isinstance(row, Response):
            return row
        status, output, error, error_kind, latency_s, attempts, fs = row
        # what `Response.model_construct` sets, without its per-field loop
        return rebuilt(Response, {"key": key, "status": status, "output": output, "error": error,
                                  "error_kind": error_kind, "latency_s": latency_s, "attempts": attempts}, fs)

    def status(self, key: str) -> str | None:
        """The stored status of `key` without building its record (None: absent)."""
        row = self._rows.get(key)
        return None if row is None else row.status if isinstance(row, Response) else row[0]

    def output(self, key: str) -> JSONObject | None:
        """The stored output of `key` (None: absent, or none) without building its record."""
        row = self._rows.get(key)
        return None if row is None else row.output if isinstance(row, Response) else row[1]

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return f"ResponseTable({len(self._rows)} responses)"


class Usage(BaseModel):
    """The tokens a provider reported for one answer (OpenAI's `usage`: `prompt_tokens`,
    `completion_tokens`), kept in the output under `usage` as the backend gave it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)


def reported_usage(response: Response) -> Usage | None:
    """The tokens the provider reported for this answer (None: failed, or none reported).
    A stored `usage` that is not two counts (an edited file) counts as none reported."""
    raw = response.field("usage") if response.ok else None
    if not isinstance(raw, dict):
        return None
    try:
        return Usage.model_validate(raw)
    except ValueError:
        return None


class _Output(BaseModel):
    """A typed view of a response's `output`, the backend's answer as stored (a JSON object
    that `Response` keeps whole, so the file loses nothing): a metric reads the fields of
    its request kind's view, checked; what a backend adds beside them (`usage`, `replayed`,
    a served model's name) stays in the stored object and is not read through the view."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class GenerateOutput(_Output):
    """`generate`: the completion."""

    text: str
    finish_reason: str | None = None
    output_tokens: int = 0


class ScoredTokens(_Output):
    """`sequence_logprob` / `pseudo_loglik`: per-token log-probs of a text (the first
    token's is None: nothing conditions it)."""

    tokens: list[str] = Field(default_factory=list)
    token_ids: list[int] = Field(default_factory=list)
    logprobs: list[float | None]
    offsets: list[list[int]] = Field(default_factory=list)
    """Character span of each token in the scored text."""
    conditioning: str | None = None
    """HTTP backends: how the scored text's first token was conditioned on the server
    (`http_scoring`; docs/http.md); None in-process, where the model's BOS always is."""

    def span_logprobs(self, start: int, end: int) -> list[float]:
        """Log-probs of the tokens that overlap the characters [start, end) of the scored
        text (a continuation after its context, one answer of several): a token that
        straddles the boundary (a leading space merged into a word) counts; tokens
        without a log-prob (BOS, special tokens) and empty spans do not."""
        return [lp for i in self.span_positions(start, end) if (lp := self.logprobs[i]) is not None]

    def span_positions(self, start: int, end: int) -> list[int]:
        """The positions of the tokens `span_logprobs` reads (the viewer marks them)."""
        if len(self.offsets) != len(self.logprobs):
            raise ValueError("the output has no character offsets for its tokens")
        return [i for i, ((s, e), lp) in enumerate(zip(self.offsets, self.logprobs, strict=True))
                if lp is not None and e > s and s < end and e > start]

    def part_logprobs(self, text: str, part: str) -> list[float]:
        """Log-probs of the tokens of `part` where it last occurs in the scored `text` (an
        answer or a sentence after a shared prompt); empty when it does not occur."""
        return [lp for i in self.part_positions(text, part) if (lp := self.logprobs[i]) is not None]

    def part_positions(self, text: str, part: str) -> list[int]:
        """The positions of the tokens `part_logprobs` reads."""
        start = text.rfind(part) if part else -1
        return [] if start < 0 else self.span_positions(start, start + len(part))


class NextTokenOutput(_Output):
    """`next_token`: the top-k of the next-token distribution, (token, log-prob) pairs."""

    top: list[tuple[str, float]]


Relation = Literal["entailment", "neutral", "contradiction"]


class NLIOutput(_Output):
    """`classify_nli`: relation probabilities of (premise, hypothesis)."""

    probs: dict[Relation, float]
    label_logprobs: dict[str, float | None] = Field(default_factory=dict)
    missing_labels: list[str] | None = None
    """HTTP judges: relations whose label word was not among the top log-probs (given
    probability 0); None when the backend reads exact log-probs."""

    def label(self) -> str:
        """E, N or C: the most probable relation."""
        p = self.probs
        return max((("E", p["entailment"]), ("N", p["neutral"]), ("C", p["contradiction"])), key=lambda x: x[1])[0]


class ChoiceOutput(_Output):
    """`choice`: a one-token multiple choice read from the first token's log-probs."""

    probs: dict[str, float]
    choice: str
    logprobs: dict[str, float] = Field(default_factory=dict)


class ClassifyOutput(_Output):
    """`classify`: a text classifier's label probabilities (its own label names)."""

    probs: dict[str, float]


class EmbeddingOutput(_Output):
    """`embed`: an L2-normalised sentence embedding."""

    vector: list[float]


OUTPUT_TYPES: dict[str, type[_Output]] = {
    "generate": GenerateOutput,
    "sequence_logprob": ScoredTokens,
    "pseudo_loglik": ScoredTokens,
    "next_token": NextTokenOutput,
    "classify_nli": NLIOutput,
    "choice": ChoiceOutput,
    "classify": ClassifyOutput,
    "embed": EmbeddingOutput,
}
_ADAPTERS = {kind: TypeAdapter(tp) for kind, tp in OUTPUT_TYPES.items()}


OutputT = TypeVar("OutputT", bound=_Output)


def parse_output(tp: type[OutputT], response: Response) -> OutputT | None:
    """`response`'s output as the record `tp` (None when the request failed)."""
    if not response.ok:
        return None
    return tp.model_validate(response.output)


def output_as(kind: str, response: Response) -> _Output | None:
    """The typed output of an answered request of `kind` (None when it failed)."""
    if not response.ok:
        return None
    return _ADAPTERS[kind].validate_python(response.output)


def generated_text(response: Response) -> str | None:
    """The text of an answer given as text (a generation, or a calibration's control
    response), whatever the request's kind; None for an output of numbers (scores, a
    distribution) and for a failed request."""
    if response.field("text") is None:
        return None
    out = parse_output(GenerateOutput, response)
    return out.text if out is not None else None


__all__ = [
    "ChoiceOutput",
    "ClassifyOutput",
    "EmbeddingOutput",
    "GenerateOutput",
    "NLIOutput",
    "NextTokenOutput",
    "OUTPUT_TYPES",
    "Relation",
    "Response",
    "ResponseTable",
    "ScoredTokens",
    "StoredOutput",
    "Usage",
    "generated_text",
    "output_as",
    "parse_output",
    "reported_usage",
]
