"""`identity_scope`: an evidence pack records the identities a re-computation asks for, and
`verify` pins them, so checking a pack never hashes (or needs) the weights."""

from __future__ import annotations

import pytest

import biasaudit.backends.factory as factory
from biasaudit.backends import backend_identity, identity_scope
from biasaudit.spec import ModelConfig
from biasaudit.spec.model_configs import ScriptedConfig


def test_recorded_then_pinned_identities_are_used_without_computing(monkeypatch: pytest.MonkeyPatch) -> None:
    model = ScriptedConfig(backend="scripted", name="m1")
    real = backend_identity(model)
    with identity_scope() as seen:
        assert backend_identity(model) == real
    assert list(seen.values()) == [real]
    pinned = {k: {**v, "sha256": "ab" * 32} for k, v in seen.items()}

    def no_weights(m: ModelConfig) -> dict[str, object]:
        raise AssertionError("the identity was computed, not taken from the pack")

    monkeypatch.setattr(factory, "_backend_identity", no_weights)
    with identity_scope(pinned):
        got = backend_identity(model)
        got["extra"] = 1  # a copy: the pinned table is not changed by callers
        assert backend_identity(model) == {**real, "sha256": "ab" * 32}
    other = ScriptedConfig(backend="scripted", name="m2")  # a config the pack does not pin is computed
    with identity_scope(pinned), pytest.raises(AssertionError, match="computed"):
        backend_identity(other)
