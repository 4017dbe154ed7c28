"""Model backends behind one protocol; found by name in `BACKENDS` (NLI classifiers in
`NLI_KINDS`, embedders in `EMBEDDERS`).

Heavy libraries (torch, transformers) are imported only when a local model is built.
"""

from biasaudit.backends import (  # noqa: F401  (registration)
    anthropic,
    batch_openai,
    hf_causal_kind,
    hf_masked,
    hf_nli,
    http_app,
    llm_nli,
    openai_compat,
    oracle,
    recorded,
    replay,
    scripted,
    st_embedder,
)
from biasaudit.backends.base import BACKENDS, Backend, BackendKind, Response, resolve_model_path
from biasaudit.backends.embedder import EMBEDDERS, EmbedderKind
from biasaudit.backends.factory import (
    audit_identity,
    audit_subject,
    backend_identity,
    build_audit_backend,
    build_backend,
    build_nli_backend,
    check_audit_support,
    check_probe_support,
    check_stimuli,
    identity_scope,
    kind_of,
    nli_chat_model,
    nli_identity,
    nli_is_subject,
    nli_kind,
)
from biasaudit.backends.nli_kind import NLI_KINDS, RELATIONS, NLIBuild, NLIKind

__all__ = [
    "BACKENDS",
    "EMBEDDERS",
    "NLI_KINDS",
    "RELATIONS",
    "Backend",
    "BackendKind",
    "EmbedderKind",
    "NLIBuild",
    "NLIKind",
    "Response",
    "audit_identity",
    "audit_subject",
    "backend_identity",
    "build_audit_backend",
    "check_audit_support",
    "build_backend",
    "build_nli_backend",
    "nli_chat_model",
    "nli_identity",
    "nli_is_subject",
    "nli_kind",
    "check_probe_support",
    "check_stimuli",
    "identity_scope",
    "kind_of",
    "resolve_model_path",
]
