"""`judge_panel`: N judges of the `judge` group (any backend) each answer a rubric as a
one-token multiple choice; the votes are aggregated.

Each judge's prompt is its own prompt from the group, or the layer's `rubric` for all of
them: a Jinja template over the stimulus fields, level vars and `text` (the input, with
another layer's matched span removed when the layer says `strip:`). `answers` maps each
label to the answer word the judges give (default: the panel's `labels`). Aggregation:
`majority` (strictly more than half of the judges, a missing vote counting against
every label; otherwise, ties included, Abstain), `unanimous` (every judge gives the
label), `mean` (labels are numbers; the mean of the votes given). Each (judge, input)
call is a cached request, so a response is never judged twice by the same judge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator

from biasaudit.coding.base import Answers, CallEstimate, CoderDef, CoderEnv, CodingRequest
from biasaudit.errors import SpecError
from biasaudit.records.codes import Code, CodeDetail, CodeStatus, Unit, new_code
from biasaudit.records.coding import PanelReport, PositionReport
from biasaudit.records.responses import ChoiceOutput, parse_output
from biasaudit.registry import CODERS
from biasaudit.spec import JudgePanelConfig, JudgeSpec
from biasaudit.spec.templates import check_variables, reads, render

_UNSEEN = object()


class JudgePanelOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    judges: list[str] | None = None
    """Names of the judges of the `judge` group that sit on this panel (default: all)."""
    rubric: str | None = None
    """A template used by every judge instead of its own prompt."""
    answers: dict[str, str] | None = None
    """Label -> answer word (default: the panel's `labels`)."""
    aggregate: Literal["majority", "unanimous", "mean"] = "majority"
    """How the judges' votes become the layer's code: `majority` (a tie abstains),
    `unanimous` (any disagreement abstains) or `mean` (the mean of numeric labels)."""
    max_chars: int | None = Field(default=None, ge=1)
    """Cut the input to this many characters (default: the whole text)."""

    @field_validator("answers", mode="before")
    @classmethod
    def _text(cls, v: object) -> object:
        return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else v


def majority(labels: Sequence[str | None]) -> str | None:
    """Strict majority of the judges' labels (a missing vote counts against every label);
    None when there is none (ties included)."""
    votes = Counter(x for x in labels if x is not None)
    if not votes:
        return None
    (top, n), *rest = votes.most_common()
    if n * 2 > len(labels) and not (rest and rest[0][1] == n):
        return top
    return None


def unanimous(labels: Sequence[str | None]) -> str | None:
    return labels[0] if labels and labels[0] is not None and all(x == labels[0] for x in labels) else None


def mean_vote(labels: Sequence[str | None]) -> float | None:
    nums = [float(x) for x in labels if x is not None]
    return sum(nums) / len(nums) if nums else None


def _panel(env: CoderEnv) -> JudgePanelConfig:
    if env.config.judge is None:
        raise SpecError("a judge_panel layer needs the judge group", file=env.spec_file, key=env.key("coder"),
                        hint="add judge=smollm2_panel (or another conf/judge/ option)")
    return env.config.judge


def _judges(env: CoderEnv, o: JudgePanelOptions) -> list[JudgeSpec]:
    panel = _panel(env)
    if o.judges is None:
        return list(panel.judges)
    by_name = {j.name: j for j in panel.judges}
    return [by_name[n] for n in o.judges]


def _answers(env: CoderEnv, o: JudgePanelOptions) -> dict[str, str]:
    return dict(o.answers) if o.answers is not None else dict(_panel(env).labels)


class JudgePanelEvidence(CodeDetail):
    """What each judge of the panel said."""

    votes: dict[str, str | None] | None = None
    """Judge name -> its label (None: its answer could not be read)."""

    def rater_votes(self) -> Mapping[str, str | None] | None:
        return self.votes


class JudgePanelCoder:
    def __init__(self, env: CoderEnv, options: JudgePanelOptions) -> None:
        self.env = env
        self.o = options
        self.judges = _judges(env, options)
        self.answers = _answers(env, options)
        self.words = list(self.answers.values())
        self.label_of = {w: lab for lab, w in reversed(list(self.answers.items()))}  # first label wins a shared word
        # the same for every request: serialised once, not once per unit and judge
        self.params = CodingRequest.chat("judge", "choice", "", {"choices": self.words}).params
        # unit id -> (its input, its requests): `plan` is asked again after the answers
        # come, and `code` reads the same requests, so each unit's prompts render once
        self._planned: dict[str, tuple[str, tuple[CodingRequest, ...]]] = {}
        # Units whose rendered prompts are equal (the same statement and answer under
        # another template or sample) hold one request object and one vote record, not one
        # each: at a million units the copies were gigabytes (issue 42).
        self._same: dict[CodingRequest, CodingRequest] = {}
        self._same_all: dict[tuple[CodingRequest, ...], tuple[CodingRequest, ...]] = {}
        self._details: dict[tuple[tuple[str, str | None], ...], tuple[JudgePanelEvidence, str | float | None]] = {}
        # A prompt is a function of the few variables its template reads (templates.render
        # memoises on them too): units equal on those share one list of requests, found
        # with one lookup instead of a render and a request per judge (issue 42: half the
        # coding stage). None until the first render (the templates then parse).
        self._reads: tuple[str, ...] | None = None
        self._by_reads: dict[tuple[tuple[type, object], ...], tuple[CodingRequest, ...]] = {}

    def requests(self, unit: Unit, text: str) -> tuple[CodingRequest, ...]:
        planned = self._planned.get(unit.id)
        if planned is not None and planned[0] == text:
            return planned[1]
        full = text
        if self.o.max_chars is not None:
            text = text[: self.o.max_chars]
        ctx = unit.context(text=text)
        seen = self._seen(ctx)
        got: tuple[CodingRequest, ...] | None = self._by_reads.get(seen) if seen is not None else None
        if got is None:
            out = []
            for j in self.judges:
                key = self.env.key("rubric") if self.o.rubric else f"judge.judges.{j.name}.prompt"
                user = render(self.o.rubric or j.prompt, ctx, file=self.env.spec_file if self.o.rubric else None,
                              key=key)
                req = CodingRequest(route=f"judge:{j.name}", kind="choice", user=user, params=self.params)
                out.append(self._same.setdefault(req, req))
            # units asking the same prompts share one tuple of them (issue 42)
            got = tuple(out)
            got = self._same_all.setdefault(got, got)
            if self._reads is None:  # the templates rendered: they parse
                self._reads = tuple(sorted(set().union(*(reads(self.o.rubric or j.prompt) for j in self.judges))))
                seen = self._seen(ctx)
            if seen is not None:
                self._by_reads[seen] = got
        self._planned[unit.id] = (full, got)
        return got

    def _seen(self, ctx: Mapping[str, object]) -> tuple[tuple[type, object], ...] | None:
        """The values (with their types: 1 and 1.0 render differently) of the variables the
        judges' templates read, as `render`'s memo keys them; None when one is missing or
        unhashable (a mapping), or before the first render."""
        if self._reads is None:
            return None
        try:
            seen = tuple((type(ctx[n]), ctx[n]) for n in self._reads)
            hash(seen)
        except (KeyError, TypeError):
            return None
        return seen

    def plan(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[CodingRequest]:
        return [r for u in units for r in self.requests(u, inputs[u.id])]

    def code(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[Code]:
        out = []
        # one answer serves every unit that asked it; requests are the coder's own shared
        # objects (`_same`), so they are told apart by identity (hashing a request's fields
        # was most of this loop)
        vote_of: dict[int, str | None] = {}
        # units sharing one tuple of requests (equal prompts) share their verdict: id(tuple)
        # -> (the tuple, kept alive while its id is a key; the evidence and the result)
        verdict_of: dict[int, tuple[tuple[CodingRequest, ...], JudgePanelEvidence, str | float | None]] = {}
        for u in units:
            reqs = self.requests(u, inputs[u.id])
            verdict = verdict_of.get(id(reqs))
            if verdict is None:
                verdict = verdict_of[id(reqs)] = (reqs, *self._verdict(reqs, answers, vote_of))
            _, detail, result = verdict
            status: CodeStatus = "coded" if result is not None else "abstain"
            # (new_code: the record Code(...) gives, without validating what is already typed)
            if self.o.aggregate == "mean":
                out.append(new_code(u.id, status, detail, value=result, source="judge_panel"))
            else:
                out.append(new_code(u.id, status, detail, label=result, source="judge_panel"))
        return out

    def _verdict(self, reqs: Sequence[CodingRequest], answers: Answers,
                 vote_of: dict[int, str | None]) -> tuple[JudgePanelEvidence, str | float | None]:
        """The judges' votes on one unit's requests, and the label (or value) they give."""
        votes: dict[str, str | None] = {}
        for j, req in zip(self.judges, reqs, strict=True):
            vote = vote_of.get(id(req), _UNSEEN)
            if vote is _UNSEEN:
                r = answers.get(req)
                got = parse_output(ChoiceOutput, r) if r is not None else None
                vote = vote_of[id(req)] = self.label_of.get(got.choice) if got is not None else None
            votes[j.name] = cast(str | None, vote)
        seen = tuple(votes.items())
        # the label (or value) is a function of the votes: worked out once per distinct
        # votes, with their one evidence record (issue 42)
        known = self._details.get(seen)
        if known is None:
            labels = list(votes.values())
            result: str | float | None
            if self.o.aggregate == "mean":
                result = mean_vote(labels)
            else:
                result = majority(labels) if self.o.aggregate == "majority" else unanimous(labels)
            known = self._details[seen] = (JudgePanelEvidence(votes=votes), result)
        return known


def _check(env: CoderEnv, o: JudgePanelOptions) -> None:
    panel = _panel(env)
    names = [j.name for j in panel.judges]
    for i, n in enumerate(o.judges or []):
        if n not in names:
            raise SpecError(f"no judge named {n!r} in the judge group", file=env.spec_file,
                            key=env.key(f"judges[{i}]"), hint=f"judges: {', '.join(names)}")
    answers = _answers(env, o)
    if len(answers) < 2:
        raise SpecError("a judge panel needs at least two labels with answer words", file=env.spec_file,
                        key=env.key("answers"), hint="e.g. answers: {agree: A, disagree: B}")
    if o.aggregate == "mean":
        for lab in answers:
            try:
                float(lab)
            except ValueError:
                raise SpecError(f"`aggregate: mean` needs numeric labels, got {lab!r}", file=env.spec_file,
                                key=env.key("answers"), hint="use labels such as 1..5, or majority") from None
    available = set(env.variables) | {"text"}
    if o.rubric is not None:
        check_variables(o.rubric, available, file=env.spec_file, key=env.key("rubric"))
    else:
        for j in _judges(env, o):
            check_variables(j.prompt, available, file=None, key=f"judge.judges.{j.name}.prompt")


def _estimate(env: CoderEnv, o: JudgePanelOptions, n: int) -> CallEstimate:
    judges = _judges(env, o)
    chars = max(len(o.rubric or j.prompt) for j in judges) + 4 * env.config.probe.max_tokens
    calls = n * len(judges)
    return CallEstimate(calls=calls, bound="at most", input_tokens=calls * (chars // 4 + 1), output_tokens=calls,
                        note=f"{len(judges)} judge(s) per unit; identical inputs are asked once")


def _reliability(layer: str, o: JudgePanelOptions, units: Sequence[Unit], codes: Mapping[str, Code],
                 seed: int) -> list[PanelReport | PositionReport]:
    """The judges' agreement with each other (`coding.reliability.panel_report`)."""
    from biasaudit.coding.reliability import (
        panel_report,  # (it imports the layers, which import the registry)
    )

    rep = panel_report(layer, units, codes, seed)
    return [rep] if rep is not None else []


JUDGE_PANEL = CoderDef(
    options=JudgePanelOptions, build=JudgePanelCoder, title="Judge panel", evidence=JudgePanelEvidence,
    routes=lambda env, o: [(f"judge:{j.name}", "choice") for j in _judges(env, o)],
    labels=lambda env, o: None if o.aggregate == "mean" else list(_answers(env, o)),
    check=_check, estimate=_estimate, reliability=_reliability,
    value_type=lambda env, o: "number" if o.aggregate == "mean" else "label",
    per_unit=True,  # each unit's code from its judges' votes
)
CODERS.add("judge_panel", JUDGE_PANEL)
