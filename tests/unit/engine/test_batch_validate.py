"""`runtime.batch.enabled` is refused at validate, in one line naming the key and the fix
(exit 2), where the model's backend has no provider batch API (an in-process model, a
model served by a managed engine) or its provider does not batch the probe's kind
(scoring texts over HTTP probes the server first). Anthropic's provider batches only
`generate` (no log-probs) once its backend declares it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from biasaudit.backends.batch_base import BATCH_PROVIDERS
from tests.conftest import isolation


@pytest.mark.parametrize("model", [[], ["model=scripted"], ["model.serve=llamacpp"]])
def test_batch_on_a_backend_without_a_batch_api_is_refused(workdir: Path, cli: Any, model: list[str]) -> None:
    code, _, err = cli("validate", "spec=crows_pairs_tp", *model, "runtime.batch.enabled=true", *isolation(workdir))
    assert code == 2, err
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("error: runtime.batch.enabled: model backend") and "has no provider batch API" in lines[0]
    assert "set runtime.batch.enabled=false" in lines[0]


def test_scoring_probes_are_not_batched_over_openai(workdir: Path, cli: Any) -> None:
    code, _, err = cli("validate", "spec=crows_pairs_tp", "model=openai_compat", "model.base_url=http://127.0.0.1:9/v1",
                       "runtime.batch.enabled=true", *isolation(workdir))
    assert code == 2 and "Traceback" not in err
    assert "runtime.batch.enabled: model backend 'openai_compat' does not batch sequence_logprob probes" in err


def test_batch_off_by_default_and_the_declared_kinds() -> None:
    from biasaudit.spec import RuntimeConfig

    assert RuntimeConfig().batch.enabled is False
    hook = BATCH_PROVIDERS.get("openai_compat")
    assert hook is not None and hook.kinds == {"generate", "next_token", "choice"}
    assert not BATCH_PROVIDERS.has("hf_causal")


def test_anthropic_provider_refuses_log_prob_probes_at_validate(workdir: Path, cli: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """As the Messages backend will declare it (`batch_anthropic.attach`); here on the
    scripted backend, for want of that backend on this branch."""
    from biasaudit.backends import batch_anthropic

    monkeypatch.setattr(BATCH_PROVIDERS, "_by_kind", dict(BATCH_PROVIDERS._by_kind))
    batch_anthropic.attach("scripted", lambda backend, runtime: None)
    code, _, err = cli("validate", "spec=crows_pairs_tp", "model=scripted", "runtime.batch.enabled=true",
                       *isolation(workdir))
    assert code == 2 and "Traceback" not in err
    assert ("runtime.batch.enabled: model backend 'scripted' does not batch sequence_logprob probes: "
            "Anthropic's Messages API returns no log-probs") in err
