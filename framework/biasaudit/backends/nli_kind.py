"""What an NLI classifier kind is (registered in `NLI_KINDS` by its `nli.backend` tag):
its config model, how its identity is read, how it is built, and what it can do. Core
code asks these capabilities, never the kind's name, so a plug-in classifier is treated
as a shipped one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from biasaudit.backends.base import Backend
from biasaudit.records.json import JSONObject
from biasaudit.registry import NLI_KINDS as NLI_KINDS  # re-exported: NLI classifiers register here
from biasaudit.spec import BaseNLIConfig, ModelConfig, RuntimeConfig

N = TypeVar("N", bound=BaseNLIConfig)

RELATIONS = ("entailment", "neutral", "contradiction")
"""The three relations a `classify_nli` answer gives probabilities for (`probs`)."""


@dataclass(frozen=True)
class NLIBuild:
    """What building an NLI backend is given besides its config."""

    runtime: RuntimeConfig
    relations: bool = True
    """False: the model is loaded as a plain text classifier (a `classifier` coding layer
    without a hypothesis), only for kinds with `classifier`."""
    chat: ModelConfig | None = None
    """The chat model asked, for kinds with `asks_chat` (else None)."""
    chat_backend: Backend | None = None
    """That chat model's backend, built by the factory (which owns the loaded-model memo)."""


@dataclass(frozen=True)
class NLIKind(Generic[N]):
    """An NLI classifier: answers `classify_nli` requests with `probs` over `RELATIONS`."""

    config: type[N]
    identity: Callable[[N, JSONObject | None], JSONObject]
    """What changes its answers (the cache keys them on it); given the chat model's
    identity when it `asks_chat`, else None."""
    build: Callable[[N, NLIBuild], Backend]
    asks_chat: bool = False
    """It needs a chat model with next-token log-probs: the one its config names
    (`models()`), else the model under test."""
    own_weights: bool = False
    """It is a model of its own (local weights with an identity of their own): in a
    `classify_nli` run it is the audited subject, not the model under test, whose
    settings and licence notice then play no part."""
    classifier: bool = False
    """It also answers the `classifier` route (one text -> probabilities over its own labels)."""
    legacy_dump: Callable[[N], JSONObject] | None = None
    """The config as packs written before NLI kinds registered keyed its identity (one
    `NLIConfig` holding every kind's settings), so those packs still verify."""


_V1_DEFAULTS: JSONObject = {
    "path": None, "label_map": {}, "dtype": "float32", "device": "auto", "model": None,
    "prompt": "Premise: {{ premise }}\nHypothesis: {{ hypothesis }}\n"
              "Does the premise entail the hypothesis? Answer with one word: Yes, Maybe, or No.",
    "labels": {"entailment": "Yes", "neutral": "Maybe", "contradiction": "No"},
}


def v1_dump(cfg: BaseNLIConfig) -> JSONObject:
    """`cfg` in the one-class layout of the shipped kinds before they registered: every
    setting of either kind, the other kind's at its old default."""
    return {**_V1_DEFAULTS, **cfg.model_dump(mode="json")}


__all__ = ["NLI_KINDS", "RELATIONS", "NLIBuild", "NLIKind", "v1_dump"]
