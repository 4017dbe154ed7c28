"""Model backends behind one protocol; found by name in `BACKENDS`.

Heavy libraries (torch, transformers) are imported only when a local model is built.
"""

from biasaudit.backends import (  # noqa: F401  (registration)
    anthropic,
    batch_openai,
    hf_causal_kind,
    hf_masked,
    http_app,
    openai_compat,
    oracle,
    recorded,
    replay,
    scripted,
)
from biasaudit.backends.base import BACKENDS, Backend, BackendKind, Response, resolve_model_path
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
    nli_identity,
)

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendKind",
    "Response",
    "audit_identity",
    "audit_subject",
    "backend_identity",
    "build_audit_backend",
    "check_audit_support",
    "build_backend",
    "build_nli_backend",
    "nli_identity",
    "check_probe_support",
    "check_stimuli",
    "identity_scope",
    "kind_of",
    "resolve_model_path",
]
