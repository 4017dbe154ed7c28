"""`embedding`: cosine similarity through the `embedder` group.

With `reference` (a Jinja template over the stimulus fields and level vars) the code's
value is the cosine similarity of the input to that text. With `compare: same_stimulus`
the code's `detail.similarity` holds the cosine similarity to every other coded input
of the same stimulus (FiSCo's embedding baseline) and its value their mean. Embeddings
are cached per embedder and text, so nothing is embedded twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from biasaudit.coding.base import Answers, CallEstimate, CoderDef, CoderEnv, CodingRequest
from biasaudit.errors import SpecError
from biasaudit.records.codes import Code, CodeDetail, Unit
from biasaudit.records.responses import EmbeddingOutput, parse_output
from biasaudit.registry import CODERS
from biasaudit.spec.templates import check_variables, render


class EmbeddingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    reference: str | None = None
    """A template giving the text each input is compared with."""
    compare: Literal["same_stimulus"] | None = None
    """Compare each input with the other inputs of its stimulus instead."""

    @model_validator(mode="after")
    def _one(self) -> EmbeddingOptions:
        if (self.reference is None) == (self.compare is None):
            raise ValueError("give exactly one of `reference` (a template) or `compare: same_stimulus`")
        return self


def cosine(u: Sequence[float], v: Sequence[float]) -> float:
    a, b = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def embed_request(text: str) -> CodingRequest:
    return CodingRequest(route="embedder", kind="embed", text=text)


class EmbeddingEvidence(CodeDetail):
    """The input's similarity to the other units of its stimulus."""

    similarity: dict[str, float] | None = None
    """Other unit of the same stimulus -> cosine similarity of the two inputs."""


class EmbeddingCoder:
    def __init__(self, env: CoderEnv, options: EmbeddingOptions) -> None:
        self.env = env
        self.o = options

    def _reference(self, unit: Unit) -> str:
        assert self.o.reference is not None
        return render(self.o.reference, unit.context(), file=self.env.spec_file, key=self.env.key("reference"))

    def plan(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[CodingRequest]:
        texts = [inputs[u.id] for u in units]
        if self.o.reference is not None:
            texts += [self._reference(u) for u in units]
        return [embed_request(t) for t in texts]

    def _vec(self, text: str, answers: Answers, seen: dict[str, tuple[np.ndarray, np.floating] | None]
             ) -> tuple[np.ndarray, np.floating] | None:
        """The text's embedding and its norm, read from its answer once per `code` call
        (a stimulus's G inputs were parsed G times each, once per pair)."""
        if text in seen:
            return seen[text]
        r = answers.get(embed_request(text))
        e = parse_output(EmbeddingOutput, r) if r is not None else None
        if e is None:
            seen[text] = None
            return None
        a = np.asarray(e.vector, dtype=np.float64)
        got = seen[text] = (a, np.linalg.norm(a))
        return got

    def code(self, units: Sequence[Unit], inputs: Mapping[str, str], answers: Answers) -> list[Code]:
        out = []
        by_stim: dict[str, list[Unit]] = {}
        for u in units:
            by_stim.setdefault(u.stimulus, []).append(u)
        # embeddings of this call's texts (the stage passes whole stimuli a chunk at a time:
        # `chunk_by`, so this holds one chunk's vectors, not the layer's)
        seen: dict[str, tuple[np.ndarray, np.floating] | None] = {}
        for u in units:
            v = self._vec(inputs[u.id], answers, seen)
            if v is None:
                out.append(Code(unit=u.id, status="failed", source="embedding", detail=EmbeddingEvidence(reason="embedding failed")))
                continue
            if self.o.reference is not None:
                ref = self._vec(self._reference(u), answers, seen)
                if ref is None:
                    out.append(Code(unit=u.id, status="failed", source="embedding", detail=EmbeddingEvidence(reason="embedding failed")))
                    continue
                out.append(Code(unit=u.id, status="coded", value=_cos(v, ref), source="embedding"))
                continue
            sims: dict[str, float] = {}
            for other in by_stim[u.stimulus]:
                w = self._vec(inputs[other.id], answers, seen) if other.id != u.id else None
                if w is not None:
                    sims[other.id] = _cos(v, w)
            out.append(Code(unit=u.id, status="coded", value=float(np.mean(list(sims.values()))) if sims else None,
                            source="embedding", detail=EmbeddingEvidence(similarity=sims)))
        return out


def _cos(a: tuple[np.ndarray, np.floating], b: tuple[np.ndarray, np.floating]) -> float:
    """`cosine` of two parsed vectors with their norms: the same operations, the same digits."""
    return float(np.dot(a[0], b[0]) / (a[1] * b[1]))


def _group(o: EmbeddingOptions) -> Callable[[Unit], str]:
    """Units coded together: a stimulus's (they are compared), or each alone (a reference)."""
    if o.compare == "same_stimulus":
        return lambda u: u.stimulus
    return lambda u: u.id


def _check(env: CoderEnv, o: EmbeddingOptions) -> None:
    if env.config.embedder is None:
        raise SpecError("an embedding layer needs the embedder group", file=env.spec_file, key=env.key("coder"),
                        hint="add embedder=minilm")
    if o.reference is not None:
        check_variables(o.reference, set(env.variables), file=env.spec_file, key=env.key("reference"))


EMBEDDING = CoderDef(
    options=EmbeddingOptions, build=EmbeddingCoder, title="Embedding similarity", evidence=EmbeddingEvidence,
    routes=lambda env, o: [("embedder", "embed")], check=_check,
    estimate=lambda env, o, n: CallEstimate(calls=n * (2 if o.reference else 1), bound="at most",
                                            note="strings embedded (cached per text)"),
    value_type=lambda env, o: "number", chunk_by=_group,
)
CODERS.add("embedding", EMBEDDING)
