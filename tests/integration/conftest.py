from __future__ import annotations

import pytest

from biasaudit.backends import build_backend
from biasaudit.backends.hf_causal import HFCausalBackend
from biasaudit.spec.compose import compose


@pytest.fixture(scope="session")
def smollm2() -> HFCausalBackend:
    """The embedded SmolLM2, loaded once per test session. `biasaudit run` in this process
    reuses the same instance (the backend factory keeps loaded local models)."""
    cfg = compose([]).config
    backend = build_backend(cfg.model, cfg.runtime)
    assert isinstance(backend, HFCausalBackend)
    return backend
