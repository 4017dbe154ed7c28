"""`llm_nli`: NLI from a chat model. The model is asked for the relation; the three
probabilities are the next-token probabilities of the first token of each label word,
renormalised over the three (docs/methods/nli_bias.md, "Model call").

A local model (`hf_causal`) gives the exact log-prob of each label's first token. An HTTP
model (`openai_compat`) gives only the top 20 first tokens (`top_logprobs`): each label
takes the best returned token that starts it, and a label not among them gets
probability 0 after renormalisation (its true probability is below the 20th token's);
such answers list it under `missing_labels`. If none of the three is returned, the
request is a failure of kind `malformed`, stored and counted like any other."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from biasaudit.backends.base import Backend, Emit, Response, run_in_batches, stoppable
from biasaudit.backends.nli_kind import RELATIONS, NLIBuild, NLIKind, v1_dump
from biasaudit.errors import BackendError
from biasaudit.plan import Request
from biasaudit.records.json import JSONObject
from biasaudit.records.responses import ChoiceOutput, parse_output
from biasaudit.registry import NLI_KINDS
from biasaudit.spec import BaseNLIConfig, ModelConfig, Relation, RuntimeConfig
from biasaudit.spec.templates import render


def _default_labels() -> dict[Relation, str]:
    return {"entailment": "Yes", "neutral": "Maybe", "contradiction": "No"}


class LLMNLIConfig(BaseNLIConfig):
    """NLI by asking a chat model for the relation (`nli=llm`)."""

    backend: Literal["llm_nli"]
    """`llm_nli`: a chat model asked for the relation."""
    model: ModelConfig | None = None
    """The chat model asked for the relation (None: the model under test)."""
    prompt: str = (
        "Premise: {{ premise }}\nHypothesis: {{ hypothesis }}\n"
        "Does the premise entail the hypothesis? Answer with one word: Yes, Maybe, or No."
    )
    """The question template over `premise` and `hypothesis`."""
    labels: dict[Relation, str] = Field(default_factory=_default_labels)
    """The answer word for each relation; its first token's log-prob is read."""

    def models(self) -> list[ModelConfig]:
        return [self.model] if self.model is not None else []


def identity(cfg: LLMNLIConfig, chat_identity: JSONObject | None) -> JSONObject:
    return {"backend": "llm_nli", "model": chat_identity, "prompt": cfg.prompt, "labels": {str(rel): w for rel, w in cfg.labels.items()}}


class LLMNLIBackend:
    supports = frozenset({"classify_nli"})

    def __init__(self, cfg: LLMNLIConfig, chat: ModelConfig, inner: Any, runtime: RuntimeConfig) -> None:
        """`inner` is the chat model's backend, built by the factory (which imports this
        module; building it here would make the two import each other)."""
        self.cfg = cfg
        self.batch_size = runtime.batch_size
        self.inner: Any = inner
        labels = {str(k): v for k, v in self.cfg.labels.items()}
        self.words = [str(labels[rel]) for rel in RELATIONS]
        self.token_ids: list[int] = []
        if not hasattr(self.inner, "choice_logprobs"):
            if "choice" not in getattr(self.inner, "supports", ()):
                raise BackendError(
                    f"llm_nli needs a chat model that gives next-token log-probs; {chat.backend!r} does not",
                    key="nli.model", hint="use a hf_causal model (e.g. the default smollm2) or an openai_compat one",
                )
            if len({w.strip().lower() for w in self.words}) != 3:
                raise BackendError("the three label words are not distinct", key="nli.labels")
            return  # label words are matched against the server's top tokens (`choice`)
        tok: Any = getattr(self.inner, "tok", None)
        for rel in RELATIONS:
            ids = tok(labels[rel], add_special_tokens=False)["input_ids"]
            if not ids:
                raise BackendError(f"label word for {rel} is empty", key=f"nli.labels.{rel}")
            self.token_ids.append(int(ids[0]))
        if len(set(self.token_ids)) != 3:
            raise BackendError("the three label words start with the same token", key="nli.labels",
                               hint="choose label words whose first tokens differ")

    def messages(self, r: Request) -> list[dict[str, str]]:
        user = render(self.cfg.prompt, {"premise": r.text or "", "hypothesis": r.text_pair or ""},
                      file=None, key="nli.prompt")
        return [{"role": "user", "content": user}]

    def answer(self, batch: list[Request]) -> list[JSONObject]:
        out: list[JSONObject] = []
        for lps in self.inner.choice_logprobs([self.messages(r) for r in batch], self.token_ids):
            top = max(lps)
            z = sum(math.exp(x - top) for x in lps)
            out.append({"probs": {rel: math.exp(x - top) / z for rel, x in zip(RELATIONS, lps, strict=True)},
                        "label_logprobs": dict(zip(RELATIONS, lps, strict=True))})
        return out

    def execute(self, requests: Sequence[Request], emit: Emit) -> None:
        if self.token_ids:  # in this process: Ctrl-C takes effect inside a forward pass too
            with stoppable(getattr(self.inner, "model", None)):
                run_in_batches(requests, self.batch_size, self.answer, emit)
            return
        # HTTP: one `choice` request per NLI request, all handed to the backend at once so
        # its own concurrency, retries and failure kinds apply; answers keep the NLI key.
        asked = [Request(key=r.key, kind="choice", messages=self.messages(r), params={"choices": [*self.words]})
                 for r in requests]
        self.inner.execute(asked, lambda resp: emit(self._from_choice(resp)))

    def _from_choice(self, resp: Response) -> Response:
        got = parse_output(ChoiceOutput, resp)
        if got is None:
            return resp
        probs = [got.probs[w] for w in self.words]
        lps = got.logprobs
        out: JSONObject = {
            "probs": dict(zip(RELATIONS, probs, strict=True)),
            "label_logprobs": {rel: lps.get(w) for rel, w in zip(RELATIONS, self.words, strict=True)},
            "missing_labels": [rel for rel, w in zip(RELATIONS, self.words, strict=True) if w not in lps]}
        return resp.model_copy(update={"output": out})

    def apply_runtime(self, runtime: RuntimeConfig) -> None:
        self.batch_size = runtime.batch_size
        self.inner.apply_runtime(runtime)  # the chat model's own batching

    def close(self) -> None:
        pass


def _build(cfg: LLMNLIConfig, how: NLIBuild) -> Backend:
    assert how.chat is not None and how.chat_backend is not None  # the factory builds them for `asks_chat`
    return LLMNLIBackend(cfg, how.chat, how.chat_backend, how.runtime)


NLI_KINDS.add("llm_nli", NLIKind(config=LLMNLIConfig, identity=identity, build=_build, asks_chat=True,
                                 legacy_dump=v1_dump))
