"""`choice`: a single-token multiple-choice question to a model with log-probs (a judge
of the `judge` group, or the model under test), options given as data.

Each option is an answer word and the label it stands for; the model's answer is read
from the log-probs of the first token of each word, renormalised over the options. The
order the options are listed in the prompt is counterbalanced:

- `both` (default): every unit is asked twice, in the listed and in the reverse order;
  the label is the option with the highest mean probability over the two orders, and a
  unit whose two answers differ counts as a position flip;
- `rotate`: every unit is asked once, with the options rotated by a seeded offset, and
  the position effect is the share of answers that pick whatever was listed first
  (1 / number of options without a position effect);
- `fixed`: asked once, in the listed order (no position effect can be measured).

With `by: <factor>`, each level has its own question (`levels`); other levels are not
applicable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from biasaudit.coding.base import Answers, CallEstimate, CoderDef, CoderEnv, CodingRequest
from biasaudit.errors import SpecError
from biasaudit.records.codes import Code, CodeDetail, Unit, new_code
from biasaudit.records.coding import PanelReport, PositionReport
from biasaudit.records.responses import ChoiceOutput, parse_output
from biasaudit.registry import CODERS
from biasaudit.spec.templates import check_variables, render
from biasaudit.stats import wilson


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    prompt: str
    """Jinja template over the stimulus fields, level vars, `text` (the input) and
    `options` (the answer words in the asked order, e.g. "Yes, No, or Refuse")."""
    options: dict[str, str] = Field(min_length=2)
    """Answer word -> label, in the order they are listed."""

    @field_validator("options", mode="before")
    @classmethod
    def _text_keys(cls, v: object) -> object:
        return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else v


class ChoiceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    prompt: str | None = None
    """The question for every unit (or give `by` and `levels`)."""
    options: dict[str, str] | None = None
    """Answer word -> label, in the order they are listed (with `prompt`)."""
    by: str | None = None
    """A factor: each of its levels listed in `levels` gets its own question."""
    levels: dict[str, Question] = Field(default_factory=dict)
    """Level of the `by` factor -> its own question (`prompt` and `options`)."""
    judge: str | None = None
    """Which judge of the `judge` group answers (default: the first; with no panel, the
    model under test)."""
    order: Literal["both", "rotate", "fixed"] = "both"
    """Option-order counterbalancing (see the module text)."""
    seed: int = 0
    """Seed of the `rotate` offsets."""
    max_chars: int = Field(default=1500, ge=1)
    """The input is cut to this many characters before it goes into the prompt."""

    @model_validator(mode="after")
    def _one_form(self) -> ChoiceOptions:
        if self.by is None:
            if self.prompt is None or self.options is None:
                raise ValueError("give `prompt` and `options`, or `by` and `levels`")
            Question(prompt=self.prompt, options=self.options)
        elif not self.levels:
            raise ValueError("`by` needs `levels` (level -> {prompt, options})")
        return self

    def questions(self) -> dict[str | None, Question]:
        if self.by is None:
            assert self.prompt is not None and self.options is not None
            return {None: Question(prompt=self.prompt, options=self.options)}
        out: dict[str | None, Question] = {}
        out.update(self.levels)
        return out


def options_text(words: Sequence[str]) -> str:
    """'A or B', 'A, B, or C'."""
    if len(words) <= 2:
        return " or ".join(words)
    return ", ".join(words[:-1]) + ", or " + words[-1]


def _route(env: CoderEnv, o: ChoiceOptions) -> str:
    panel = env.config.judge
    if o.judge is not None:
        return f"judge:{o.judge}"
    return f"judge:{panel.judges[0].name}" if panel is not None else "subject"


class ChoiceAsked(BaseModel):
    """One order a `choice` question was asked in, and the option the model chose."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    order: list[str]
    choice: str


class ChoiceEvidence(CodeDetail):
    """Each option order asked, what the model chose, and how the order moved it."""

    asked: list[ChoiceAsked] | None = None
    """Each option order asked, and the option chosen."""
    probs: dict[str, float] | None = None
    """Option -> its probability, the mean over the orders asked."""
    flipped: bool | None = None
    """The chosen option changed with the option order."""
    picked_first: list[bool] | None = None
    """Per order asked, whether the option listed first was chosen."""
    n_options: int | None = None
    """The number of options."""


class ChoiceCoder:
    def __init__(self, env: CoderEnv, options: ChoiceOptions) -> None:
        self.env = env
        self.o = options
        self.route = _route(env, options)
        self.questions = options.questions()
        self._details: dict[tuple[object, ...], ChoiceEvidence] = {}
        self._params: dict[tuple[str, ...], str] = {}

    def _question(self, unit: Unit) -> Question | None:
        if self.o.by is None:
            return self.questions[None]
        return self.questions.get(unit.levels.get(self.o.by))

    def orders(self, unit: Unit, q: Question) -> list[list[str]]:
        words = list(q.options)
        if self.o.order == "fixed":
            return [words]
        if self.o.order == "both":
            return [words, words[::-1]]
        digest = hashlib.sha256(f"{self.o.seed}:{unit.id}".encode()).digest()
        k = int.from_bytes(digest[:4], "big") % len(words)
        return [words[k:] + words[:k]]

    def request(self, unit: Unit, q: Question, text: str, words: list[str]) -> CodingRequest:
        ctx = unit.context(text=text[: self.o.max_chars], options=options_text(words))
        user = render(q.prompt, ctx, file=self.env.spec_file, key=self.env.key("prompt"))
        # the parameters depend on the words alone: serialised once per order, not per unit
        params = self._params.get(tuple(words))
        if params is None:
            params = self._params[tuple(words)] = CodingRequest.chat(self.route, "choice", user, {"choices": words}).params
        return CodingRequest(route=self.route, kind="choice", user=user, params=params)

    def plan(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[CodingRequest]:
        out: list[CodingRequest] = []
        for u in units:
            q = self._question(u)
            if q is not None:
                out += [self.request(u, q, inputs[u.id], words) for words in self.orders(u, q)]
        return out

    def code(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[Code]:
        out: list[Code] = []
        for u in units:
            q = self._question(u)
            if q is None:
                reason = f"no question for {self.o.by}={u.levels.get(self.o.by or '')}"
                out.append(new_code(u.id, "not_applicable", self._reason(reason), source="choice"))
                continue
            asked = []
            for words in self.orders(u, q):
                r = answers.get(self.request(u, q, inputs[u.id], words))
                got = parse_output(ChoiceOutput, r) if r is not None else None
                if got is None:
                    break
                asked.append((words, got))
            if len(asked) < len(self.orders(u, q)):
                out.append(new_code(u.id, "failed", self._reason("a choice request failed"), source="choice"))
                continue
            # mean probability of each option over the orders asked; ties go to the listed order
            mean = {w: sum(a.probs.get(w, 0.0) for _, a in asked) / len(asked) for w in q.options}
            best = max(q.options, key=lambda w: mean[w])
            # equal evidence (the same orders, answers and probabilities) is one shared record,
            # as the rules' and the panel's are: most answers repeat (issue 42)
            key = (tuple((tuple(words), a.choice) for words, a in asked), tuple(mean.items()), len(q.options))
            detail = self._details.get(key)
            if detail is None:
                detail = self._details[key] = ChoiceEvidence(
                    asked=[ChoiceAsked(order=words, choice=a.choice) for words, a in asked],
                    probs=mean,
                    flipped=len({a.choice for _, a in asked}) > 1,
                    picked_first=[a.choice == words[0] for words, a in asked],
                    n_options=len(q.options),
                )
            # (new_code: the record Code(...) gives, without validating what is already typed)
            out.append(new_code(u.id, "coded", detail, label=q.options[best], source="choice"))
        return out


    def _reason(self, reason: str) -> ChoiceEvidence:
        """One shared (frozen) record per reason a unit was not coded (issue 42)."""
        key = ("reason", reason)
        got = self._details.get(key)
        if got is None:
            got = self._details[key] = ChoiceEvidence(reason=reason)
        return got


def _check(env: CoderEnv, o: ChoiceOptions) -> None:
    panel = env.config.judge
    if o.judge is not None and (panel is None or o.judge not in [j.name for j in panel.judges]):
        names = ", ".join(j.name for j in panel.judges) if panel else "(no judge panel configured)"
        raise SpecError(f"no judge named {o.judge!r}", file=env.spec_file, key=env.key("judge"), hint=f"judges: {names}")
    if o.by is not None:
        env.check_levels(o.by, o.levels)
    for lv, q in o.questions().items():
        key = env.key("prompt" if lv is None else f"levels.{lv}.prompt")
        check_variables(q.prompt, set(env.variables) | {"text", "options"}, file=env.spec_file, key=key)
        if o.order != "fixed" and "options" not in q.prompt:
            raise SpecError(f"`order: {o.order}` needs the prompt to list the options with {{{{ options }}}}",
                            file=env.spec_file, key=key, hint="add {{ options }} to the prompt, or set `order: fixed`")


def _labels(env: CoderEnv, o: ChoiceOptions) -> list[str]:
    return sorted({lab for q in o.questions().values() for lab in q.options.values()})


def _estimate(env: CoderEnv, o: ChoiceOptions, n: int) -> CallEstimate:
    per = 2 if o.order == "both" else 1
    chars = max(len(q.prompt) for q in o.questions().values()) + min(o.max_chars, 4 * env.config.probe.max_tokens)
    return CallEstimate(calls=n * per, bound="at most", input_tokens=n * per * (chars // 4 + 1), output_tokens=n * per,
                        note=f"{per} per unit ({o.order} order)")


def position_report(layer: str, order: str, codes: Mapping[str, Code]) -> PositionReport | None:
    """The option-order effect of a counterbalanced `choice` layer."""
    if order not in ("both", "rotate"):
        return None
    ev = [c.detail for c in codes.values() if c.coded and c.source == "choice" and isinstance(c.detail, ChoiceEvidence)]
    # the first-option rate of every answer asked, against its no-position-effect value
    firsts = [x for d in ev for x in d.picked_first or []]
    expected = float(np.mean([1 / (d.n_options or 1) for d in ev])) if ev else None
    first = wilson(sum(firsts), len(firsts))
    if order == "both":
        flips = [bool(d.flipped) for d in ev]
        return PositionReport(layer=layer, order=order, flips=wilson(sum(flips), len(flips)), first=first,
                              expected_first=expected)
    return PositionReport(layer=layer, order=order, first=first, expected_first=expected)


def _reliability(layer: str, o: ChoiceOptions, units: Sequence[Unit], codes: Mapping[str, Code],
                 seed: int) -> list[PanelReport | PositionReport]:
    rep = position_report(layer, o.order, codes)
    return [rep] if rep is not None else []


CHOICE = CoderDef(options=ChoiceOptions, build=ChoiceCoder, title="Single-token multiple choice", evidence=ChoiceEvidence,
                  routes=lambda env, o: [(_route(env, o), "choice")], labels=_labels, check=_check, estimate=_estimate,
                  reliability=_reliability, per_unit=True)
CODERS.add("choice", CHOICE)
