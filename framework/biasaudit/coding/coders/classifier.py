"""`classifier`: a local Hugging Face model of the `nli` group labels the input.

Two modes. With `hypothesis` (a Jinja template over the stimulus fields and level vars)
the input is the premise of an NLI question, answered by the `nli` group (an NLI model,
or a chat model asked for the relation); the relation with the highest probability
(entailment / neutral / contradiction) goes through `map`. Without it, the input is
classified by the `nli` group's sequence-classification model (`nli=hf nli.path=...`,
any text-classification model) and its own label names go through `map`. A model label
missing from `map` is an abstention, as is a top probability under `min_prob`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.coding.base import Answers, CallEstimate, CoderDef, CoderEnv, CodingRequest
from biasaudit.errors import SpecError
from biasaudit.records.codes import Code, CodeDetail, Unit
from biasaudit.records.responses import ClassifyOutput, NLIOutput, parse_output
from biasaudit.registry import CODERS, NLI_KINDS
from biasaudit.spec.templates import check_variables, render

RELATION_OF = {"E": "entailment", "N": "neutral", "C": "contradiction"}


class ClassifierOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    hypothesis: str | None = None
    """NLI mode: the hypothesis template; the input is the premise."""
    map: dict[str, str] = Field(default_factory=dict)
    """Model label (NLI: entailment / neutral / contradiction) -> the layer's label;
    empty: the model's labels are the layer's labels."""
    min_prob: float = Field(default=0.0, ge=0.0, le=1.0)
    """Below this top probability the unit is an abstention."""


class ClassifierEvidence(CodeDetail):
    """The classifier's own label and its probabilities."""

    top: str | None = None
    """The model's most probable label (before the layer's label map)."""
    probs: dict[str, float] | None = None
    """Model label -> probability."""


class ClassifierCoder:
    def __init__(self, env: CoderEnv, options: ClassifierOptions) -> None:
        self.env = env
        self.o = options

    def request(self, unit: Unit, text: str) -> CodingRequest:
        if self.o.hypothesis is None:
            return CodingRequest(route="classifier", kind="classify", text=text)
        hyp = render(self.o.hypothesis, unit.context(), file=self.env.spec_file, key=self.env.key("hypothesis"))
        return CodingRequest(route="nli", kind="classify_nli", text=text, text_pair=hyp)

    def plan(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[CodingRequest]:
        return [self.request(u, inputs[u.id]) for u in units]

    def code(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[Code]:
        out = []
        for u in units:
            r = answers.get(self.request(u, inputs[u.id]))
            probs: dict[str, float] | None = None
            if r is not None and self.o.hypothesis is None:
                c = parse_output(ClassifyOutput, r)
                probs = dict(c.probs) if c is not None else None
            elif r is not None:
                n = parse_output(NLIOutput, r)
                probs = {str(k): float(v) for k, v in n.probs.items()} if n is not None else None
            if probs is None:
                out.append(Code(unit=u.id, status="failed", source="classifier", detail=ClassifierEvidence(reason="request failed")))
                continue
            top = max(probs, key=lambda k: probs[k])
            label = self.o.map.get(top, None) if self.o.map else top
            if label is None or probs[top] < self.o.min_prob:
                out.append(Code(unit=u.id, status="abstain", source="classifier", detail=ClassifierEvidence(top=top, probs=probs)))
                continue
            out.append(Code(unit=u.id, status="coded", label=label, value=probs[top], source="classifier",
                            detail=ClassifierEvidence(top=top, probs=probs)))
        return out


def _check(env: CoderEnv, o: ClassifierOptions) -> None:
    nli = env.config.nli
    if nli is None:
        raise SpecError("a classifier layer needs the nli group", file=env.spec_file, key=env.key("coder"),
                        hint="add nli=hf nli.path=<a local classification or NLI model>, or nli=llm")
    if o.hypothesis is None and not NLI_KINDS.get(nli.backend, key="nli.backend").classifier:
        raise SpecError(f"classifying text needs a local classification model (nli=hf); {nli.backend!r} only "
                        "answers NLI questions", file=env.spec_file, key=env.key("hypothesis"),
                        hint="give a `hypothesis` template, or use nli=hf nli.path=<model directory>")
    if o.hypothesis is not None:
        check_variables(o.hypothesis, set(env.variables), file=env.spec_file, key=env.key("hypothesis"))
        bad = sorted(set(o.map) - set(RELATION_OF.values()))
        if bad:
            raise SpecError(f"NLI mode maps relations; {bad[0]!r} is not one", file=env.spec_file,
                            key=env.key("map"), hint="keys: entailment, neutral, contradiction")


def _estimate(env: CoderEnv, o: ClassifierOptions, n: int) -> CallEstimate:
    return CallEstimate(calls=n, bound="at most", input_tokens=n * env.config.probe.max_tokens, output_tokens=0,
                        note="one classification per unit")


CLASSIFIER = CoderDef(
    options=ClassifierOptions, build=ClassifierCoder, title="Classifier (nli group)", evidence=ClassifierEvidence,
    routes=lambda env, o: [("classifier", "classify") if o.hypothesis is None else ("nli", "classify_nli")],
    labels=lambda env, o: sorted(set(o.map.values())) if o.map else None,
    check=_check, estimate=_estimate,
    per_unit=True,  # each unit's code from its own answer
)
CODERS.add("classifier", CLASSIFIER)
