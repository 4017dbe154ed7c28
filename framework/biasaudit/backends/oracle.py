"""`oracle`: the model config of `biasaudit selftest`, which calls no model (the spec's
method answers every request from its oracles, methods/oracle_kit.py). It supports every
probe kind so that any spec can be self-tested whatever model the operator has chosen
(a masked-LM spec on a machine without one), and it refuses to be built: it never
answers a real run."""

from __future__ import annotations

from biasaudit.backends.base import BACKENDS, Backend, BackendKind
from biasaudit.errors import BackendError
from biasaudit.records.json import JSONObject
from biasaudit.spec import OracleConfig, RuntimeConfig

KINDS = frozenset({"generate", "sequence_logprob", "pseudo_loglik", "next_token", "choice", "classify_nli"})


def _identity(cfg: OracleConfig) -> JSONObject:
    return {"backend": "oracle", "name": cfg.name}


def _build(cfg: OracleConfig, runtime: RuntimeConfig) -> Backend:
    raise BackendError("the `oracle` model answers only inside `biasaudit selftest`", key="model.backend",
                       hint="choose a real model config for `biasaudit run` (`biasaudit list models`)")


BACKENDS.add("oracle", BackendKind(config=OracleConfig, supports=KINDS, identity=_identity, build=_build, local=True,
                                   label_logprobs=True, keep_loaded=True, selftest_only=True))
