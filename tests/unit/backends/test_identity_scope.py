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


def test_a_pack_written_before_nli_kinds_registered_still_pins_its_nli_identity() -> None:
    """Packs made before NLI classifiers registered keyed an NLI identity by the digest of
    one `NLIConfig` holding every kind's settings. That digest is computed here by hand
    from the old layout (the fields and defaults of the former `spec.models.NLIConfig`),
    and `verify` (a strict scope) must still find the pinned identity through it."""
    import hashlib
    import json

    from biasaudit.backends import nli_identity
    from biasaudit.spec import validate_config

    cfg = validate_config({
        "audit": {"name": "n", "method": "nli_bias"},
        "stimuli": {"inline": [{"s": "a", "c": "b", "h": "x"}]},
        "probe": {"kind": "classify_nli", "inputs": {"stereo": "{{ s }}", "counter": "{{ c }}"}, "hypothesis": "{{ h }}"},
        "metrics": [{"name": "nli_bias"}],
        "model": {"backend": "scripted", "name": "s"},
        "nli": {"backend": "hf_nli", "name": "mnli", "path": "some/hub-id", "label_map": {"L0": "entailment"}},
    }, spec_file=None)
    old_layout = {"backend": "hf_nli", "name": "mnli", "path": "some/hub-id", "label_map": {"L0": "entailment"},
                  "dtype": "float32", "device": "auto", "model": None,
                  "prompt": "Premise: {{ premise }}\nHypothesis: {{ hypothesis }}\nDoes the premise entail the "
                            "hypothesis? Answer with one word: Yes, Maybe, or No.",
                  "labels": {"entailment": "Yes", "neutral": "Maybe", "contradiction": "No"}}
    old_key = hashlib.sha256(json.dumps(["nli", old_layout, None], sort_keys=True).encode()).hexdigest()
    recorded = {"backend": "hf_nli", "dtype": "float32", "label_map": {"L0": "entailment"}, "hub_id": "some/hub-id"}
    with identity_scope({old_key: recorded}, strict=True):
        assert nli_identity(cfg) == recorded
    with identity_scope({"0" * 64: recorded}, strict=True), pytest.raises(Exception, match="no recorded identity"):
        nli_identity(cfg)
