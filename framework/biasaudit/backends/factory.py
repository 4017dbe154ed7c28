"""Build backends from model configs and check what they can do."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from biasaudit.backends.base import BACKENDS, Backend, BackendKind
from biasaudit.backends.nli_kind import NLIBuild, NLIKind
from biasaudit.backends.weights import forget as forget_weights
from biasaudit.data import StimulusSet
from biasaudit.errors import BackendError
from biasaudit.records.json import JSONObject
from biasaudit.registry import NLI_KINDS
from biasaudit.spec import AuditConfig, ModelConfig, NLIConfig, RuntimeConfig

# Local models loaded in this process, so a sweep or a test session loads each once.
_LOADED: dict[str, Backend] = {}


def check_probe_support(model: ModelConfig, kind: str, model_file: str | None = None) -> None:
    bk = BACKENDS.get(model.backend, file=model_file, key="model.backend")
    if model.probes is not None and kind not in model.probes and kind in bk.supports:
        # the backend could, but the model is not fit for it (a base model has no chat format)
        raise BackendError(
            f"model {model.name!r} is not fit for {kind} probes",
            file=model_file,
            key="probe.kind",
            hint=f"its config allows only {', '.join(model.probes)} (`probes`); choose another model for this spec",
        )
    if kind not in bk.supports:
        local = {"pseudo_loglik": "use a local masked LM (hf_masked)"}.get(kind, "choose another model config")
        why = f" ({bk.refused_why})" if bk.refused_why else ""
        raise BackendError(
            f"model backend {model.backend!r} cannot give {kind}{why}",
            file=model_file,
            key="probe.kind",
            hint=f"it supports {', '.join(sorted(bk.supports))}; {local}",
        )


# Identities recorded or pinned for the scope of `identity_scope` (an evidence pack records
# the identities a run's re-computation asked for; `verify` pins them, so that checking a
# pack needs no weights: the recorded digests are what the stored responses are keyed on).
_SCOPE: list[dict[str, JSONObject]] = []
_STRICT: list[bool] = []


@contextlib.contextmanager
def identity_scope(pinned: dict[str, JSONObject] | None = None, *,
                   strict: bool = False) -> Iterator[dict[str, JSONObject]]:
    """Within it, an identity whose config is in `pinned` is taken from there, not computed;
    every identity asked for is recorded in the yielded mapping (config digest -> identity).
    `strict`: an identity not pinned is an error, never computed (a pack's config may name
    any path: hashing it would read files the verifier never meant to show)."""
    table = dict(pinned or {})
    _SCOPE.append(table)
    _STRICT.append(strict)
    try:
        yield table
    finally:
        _SCOPE.pop()
        _STRICT.pop()


def _scoped(what: Any, compute: Callable[[], JSONObject], aliases: tuple[Any, ...] = ()) -> JSONObject:
    """`compute()`, or the identity pinned for `what`; `aliases` are the forms `what` took
    in packs written by earlier versions, whose pinned identity is the same."""
    if not _SCOPE:
        return compute()
    table = _SCOPE[-1]
    key = _digest(what)
    if key not in table:
        old = next((k for k in map(_digest, aliases) if k in table), None)
        if old is not None:
            table[key] = table[old]
        elif _STRICT[-1]:
            raise BackendError(f"no recorded identity for the {what[0]} config {key[:16]}...", key="model",
                               hint="the evidence pack's model/identity.json lacks it: pack the run again")
        else:
            table[key] = compute()
    copied: JSONObject = json.loads(json.dumps(table[key]))  # a copy: callers may add to it
    return copied


def _digest(what: Any) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


def backend_identity(model: ModelConfig) -> JSONObject:
    return _scoped(["model", model.model_dump(mode="json")], lambda: _backend_identity(model))


def kind_of(model: ModelConfig) -> BackendKind[Any]:
    """The registered kind that runs `model` (its variant when the config's settings choose
    one, e.g. a served local model)."""
    kind: BackendKind[Any] = BACKENDS.get(model.backend, key="model.backend")
    if kind.variant is not None:
        kind = kind.variant(kind.config_of(model)) or kind
    return kind


def _backend_identity(model: ModelConfig) -> JSONObject:
    kind = kind_of(model)
    return kind.identity(kind.config_of(model))


def build_backend(model: ModelConfig, runtime: RuntimeConfig) -> Backend:
    """The backend of `model`, built with the run's settings; a local model already loaded
    in this process (or a managed engine already started: a suite's members share it) is
    reused, with this run's settings applied to it."""
    kind = kind_of(model)
    if not kind.keep_loaded:
        return kind.build(kind.config_of(model), runtime)
    memo = json.dumps([model.model_dump(mode="json"), runtime.threads], sort_keys=True)
    if memo not in _LOADED:
        _LOADED[memo] = kind.build(kind.config_of(model), runtime)
    backend = _LOADED[memo]
    # run-time settings that do not change the model apply to the instance already loaded
    backend.apply_runtime(runtime)
    return backend


def unload_all() -> None:
    for backend in _LOADED.values():
        shutdown = getattr(backend, "shutdown", None)
        if shutdown is not None:
            shutdown()  # a managed engine's process
    _LOADED.clear()
    forget_weights()  # the backends' shared weights too, so their memory can be freed


# -- what answers a spec's requests --------------------------------------------------
# classify_nli goes to the `nli` group (a registered NLI classifier kind: a model of its
# own, or a chat model asked for the relation, by default the model under test); every
# other probe goes to the model.

def nli_kind(nli: NLIConfig) -> NLIKind[Any]:
    """The registered kind of an `nli` config (its capabilities say what it needs)."""
    kind: NLIKind[Any] = NLI_KINDS.get(nli.backend, key="nli.backend")
    return kind


def nli_chat_model(cfg: AuditConfig) -> ModelConfig | None:
    """The chat model an `nli` kind that asks one is asking: the one its config names,
    else the model under test; None for a kind that asks none."""
    if cfg.nli is None or not nli_kind(cfg.nli).asks_chat:
        return None
    return next(iter(cfg.nli.models()), cfg.model)


def nli_is_subject(cfg: AuditConfig) -> bool:
    """A `classify_nli` run whose NLI classifier is a model of its own: it, not the model
    under test, is what the run audits."""
    return cfg.probe.kind == "classify_nli" and cfg.nli is not None and nli_kind(cfg.nli).own_weights


def _nli_parts(cfg: AuditConfig) -> tuple[NLIConfig, ModelConfig | None]:
    if cfg.nli is None:
        raise BackendError("probe kind classify_nli needs an `nli` config", key="nli",
                           hint="add nli=llm (the model under test answers) or nli=hf nli.path=...")
    return cfg.nli, nli_chat_model(cfg)


def audit_identity(cfg: AuditConfig) -> JSONObject:
    if cfg.probe.kind != "classify_nli":
        return backend_identity(cfg.model)
    return nli_identity(cfg)


def nli_identity(cfg: AuditConfig) -> JSONObject:
    nli, chat = _nli_parts(cfg)
    chat_dump = chat.model_dump(mode="json") if chat else None
    legacy = nli_kind(nli).legacy_dump
    aliases = (["nli", legacy(nli), chat_dump],) if legacy is not None else ()
    return _scoped(["nli", nli.model_dump(mode="json"), chat_dump], lambda: _nli_identity(cfg), aliases)


def _nli_identity(cfg: AuditConfig) -> JSONObject:
    nli, chat = _nli_parts(cfg)
    return nli_kind(nli).identity(nli, backend_identity(chat) if chat is not None else None)


def build_audit_backend(cfg: AuditConfig) -> Backend:
    if cfg.probe.kind != "classify_nli":
        return build_backend(cfg.model, cfg.runtime)
    return build_nli_backend(cfg)


def build_nli_backend(cfg: AuditConfig, relations: bool = True) -> Backend:
    """The `nli` group's backend; `relations=False` loads its model as a plain text
    classifier (`classifier` coding layers without a hypothesis)."""
    nli, chat = _nli_parts(cfg)
    memo = json.dumps(["nli", relations, nli.model_dump(mode="json"), chat.model_dump(mode="json") if chat else None],
                      sort_keys=True)
    if memo not in _LOADED:
        inner = build_backend(chat, cfg.runtime) if chat is not None else None
        how = NLIBuild(runtime=cfg.runtime, relations=relations, chat=chat, chat_backend=inner)
        _LOADED[memo] = nli_kind(nli).build(nli, how)
    backend = _LOADED[memo]
    backend.apply_runtime(cfg.runtime)  # this run's batch size on a backend an earlier run loaded
    return backend


def check_nli_chat(cfg: AuditConfig, file: str | None, key: str) -> None:
    """An `nli` kind that asks a chat model needs one whose backend scores the label
    words' next tokens (`label_logprobs`); checked before anything is built or written."""
    chat = nli_chat_model(cfg)
    if chat is None or cfg.nli is None:
        return
    if not BACKENDS.get(chat.backend, file=file, key="model.backend").label_logprobs:
        raise BackendError(
            f"{cfg.nli.backend} needs a chat model that gives next-token log-probs; {chat.backend!r} does not",
            file=file, key=key,
            hint="use a hf_causal model (e.g. the default smollm2), an openai_compat one, or nli=hf nli.path=...",
        )


def check_audit_support(cfg: AuditConfig, choices: dict[str, str]) -> None:
    check_batch_support(cfg)
    if cfg.probe.kind == "classify_nli":
        nli, chat = _nli_parts(cfg)
        if chat is not None:
            own = bool(nli.models())
            where = f"conf/nli/{choices['nli']}.yaml" if own and choices.get("nli") else \
                f"conf/model/{choices.get('model', '')}.yaml"
            check_probe_support(chat, "next_token", where)
            if chat.probes is not None:
                check_probe_support(chat, "choice", where)
            check_nli_chat(cfg, where, "nli.model" if own else "model.backend")
        return
    model_file = f"conf/model/{choices['model']}.yaml" if choices.get("model") else None
    check_probe_support(cfg.model, cfg.probe.kind, model_file)


def check_batch_support(cfg: AuditConfig) -> None:
    """`runtime.batch.enabled` needs a model whose backend declares a batch provider, and a
    probe kind that provider batches; said at validate, before anything is sent."""
    if not cfg.runtime.batch.enabled:
        return
    from biasaudit.backends.batch_base import BATCH_PROVIDERS

    hook = BATCH_PROVIDERS.get(cfg.model.backend)
    if hook is None:
        offer = ", ".join(BATCH_PROVIDERS.kinds()) or "none"
        raise BackendError(
            f"model backend {cfg.model.backend!r} has no provider batch API to send the requests through",
            key="runtime.batch.enabled",
            hint=f"set runtime.batch.enabled=false, or use a hosted model whose backend has one ({offer})",
        )
    if cfg.probe.kind not in hook.kinds:
        raise BackendError(
            f"model backend {cfg.model.backend!r} does not batch {cfg.probe.kind} probes: {hook.why_not}",
            key="runtime.batch.enabled",
            hint=f"set runtime.batch.enabled=false for this spec (batched kinds: {', '.join(sorted(hook.kinds))})",
        )
def check_stimuli(cfg: AuditConfig, stimuli: StimulusSet) -> None:
    """What the model under test can check only against the stimuli: a recorded
    decisions file must hold one row per stimulus and no other (refused before the run)."""
    kind = kind_of(cfg.model)
    if kind.check_stimuli is not None and cfg.probe.kind != "classify_nli":
        kind.check_stimuli(kind.config_of(cfg.model), stimuli, cfg.runtime.limits)


def audit_subject(cfg: AuditConfig) -> str:
    """Name of what is being audited, for reports and cross-run comparison."""
    if nli_is_subject(cfg) and cfg.nli is not None:
        return cfg.nli.name
    return cfg.model.name
