"""`tfdp_vectors`: the embeddings TFDP's alignment needs, as a coding layer.

For each answer (one sampled token, or a next-token distribution) it embeds, through
the `embedder` group, the truth and every well-formed prediction at the three scales
(the filled sentence, the 2r + 1-word window around the mask, the word itself). The
code keeps those vectors by (normalised) text, so the `tfdp` metric aligns and scores
them without touching a model, and a change of kernel, alpha or beta re-scores with no
embedding call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from biasaudit.coding.base import Answers, CallEstimate, CoderDef, CoderEnv, CodingRequest
from biasaudit.coding.coders.embedding import embed_request
from biasaudit.errors import SpecError
from biasaudit.methods.tfdp.evidence import TFDPVectorsEvidence
from biasaudit.methods.tfdp.metric import Prediction, Scorer, TFDPParams, predictions_of
from biasaudit.records.codes import Code, Unit
from biasaudit.records.json import JSONObject
from biasaudit.records.responses import EmbeddingOutput, parse_output


class TFDPVectorsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    sentence: dict[str, str] = Field(default_factory=lambda: {"s": "s", "s_prime": "s_prime"})
    """Probe input slot -> the stimulus field holding its sentence with <MASK>."""
    truth: dict[str, str] = Field(default_factory=lambda: {"s": "w_orig", "s_prime": "w_prime_orig"})
    """Probe input slot -> the stimulus field holding the expected word."""
    r: int = Field(default=2, ge=0, le=50)
    """Local window: r words either side of the mask."""


class TFDPVectorsCoder:
    def __init__(self, env: CoderEnv, options: TFDPVectorsOptions) -> None:
        self.o = options
        self.kind = env.config.probe.kind
        self.scorer = Scorer(TFDPParams(), None, r=options.r)

    def predictions(self, text: str) -> list[Prediction]:
        output: JSONObject = {"text": text}
        if self.kind == "next_token":  # the input is the distribution as JSON (the output, or its `top`)
            data = json.loads(text)
            output = {"top": data["top"] if isinstance(data, dict) else data}
        return predictions_of([output], self.kind)[0]

    def texts(self, unit: Unit, text: str) -> list[str]:
        if unit.slot not in self.o.sentence:
            return []
        masked = str(unit.fields[self.o.sentence[unit.slot]])
        truth = str(unit.fields[self.o.truth[unit.slot]])
        return self.scorer.texts(masked, truth, self.predictions(text))

    def plan(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[CodingRequest]:
        return [embed_request(t) for u in units for t in self.texts(u, inputs[u.id])]

    def code(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[Code]:
        out = []
        for u in units:
            if u.slot not in self.o.sentence:
                out.append(Code(unit=u.id, status="not_applicable", source="tfdp_vectors",
                                detail=TFDPVectorsEvidence(reason=f"slot {u.slot!r} has no sentence")))
                continue
            vectors: dict[str, list[float]] = {}
            for t in self.texts(u, inputs[u.id]):
                r = answers.get(embed_request(t))
                e = parse_output(EmbeddingOutput, r) if r is not None else None
                if e is None:
                    break
                vectors[t] = e.vector
            else:
                preds = self.predictions(inputs[u.id])
                out.append(Code(unit=u.id, status="coded", source="tfdp_vectors", detail=TFDPVectorsEvidence(
                    predictions=[(p.word, p.weight) for p in preds], vectors=vectors)))
                continue
            out.append(Code(unit=u.id, status="failed", source="tfdp_vectors", detail=TFDPVectorsEvidence(reason="embedding failed")))
        return out


def _check(env: CoderEnv, o: TFDPVectorsOptions) -> None:
    if env.config.embedder is None:
        raise SpecError("a tfdp_vectors layer needs the embedder group", file=env.spec_file, key=env.key("coder"),
                        hint="add embedder=minilm")
    if env.spec.input not in ("response", "response.top"):
        raise SpecError("a tfdp_vectors layer reads the answer itself", file=env.spec_file, key=env.key("input"),
                        hint="leave `input` out (or set input: response)")
    for slot in o.sentence:
        if slot not in o.truth:
            raise SpecError(f"slot {slot!r} has a sentence field but no truth field", file=env.spec_file,
                            key=env.key("truth"))
    for attr in ("sentence", "truth"):
        for slot, fld in getattr(o, attr).items():
            if fld not in env.variables:
                raise SpecError(f"no stimulus field {fld!r}", file=env.spec_file, key=env.key(f"{attr}.{slot}"),
                                hint="fields: " + ", ".join(sorted(env.variables - {"levels", "stimulus_id"})))


TFDP_VECTORS = CoderDef(
    options=TFDPVectorsOptions, build=TFDPVectorsCoder, title="TFDP alignment vectors", evidence=TFDPVectorsEvidence,
    routes=lambda env, o: [("embedder", "embed")], check=_check,
    estimate=lambda env, o, n: CallEstimate(calls=n * 6, bound="at most",
                                            note="strings embedded: truth and prediction at three scales"),
    value_type=lambda env, o: "number",
)
