"""Issue 19 acceptance 1: Gemma 3 270M, the second embedded model family. Its log-probs
equal a direct transformers computation (one unpadded forward pass per sentence, full
log-softmax) on 10 sentences; chat probes are refused before any call; the licence
notice is in the report of a run that uses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from biasaudit.backends import build_backend
from biasaudit.backends.hf_causal import HFCausalBackend
from biasaudit.spec.compose import compose
from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec
from tests.integration.test_hf_causal_scoring import SENTENCES as SMOLLM2_SENTENCES

pytestmark = pytest.mark.slow

SENTENCES = [
    *SMOLLM2_SENTENCES,  # the four SmolLM2's scoring tests use, and six more
    "He is a doctor and she is a nurse.",
    "My neighbour's sister works as an engineer in Lagos.",
    "The immigrants worked hard and saved their money.",
    "Ça coûte 12,50 € — naïve café prices!",
    "quap thag glin nimt day broiz",
    "The CEO, who had founded three companies, announced her retirement on Monday.",
]


@pytest.fixture(scope="session")
def gemma() -> HFCausalBackend:
    cfg = compose(["model=gemma3_270m"]).config
    backend = build_backend(cfg.model, cfg.runtime)
    assert isinstance(backend, HFCausalBackend)
    return backend


def test_gemma_logprobs_equal_a_direct_transformers_computation(gemma: HFCausalBackend) -> None:
    assert type(gemma.model).__name__ == "Gemma3ForCausalLM" and gemma.model.config.vocab_size == 262144
    assert gemma.packing_exact  # the packed path is the one under test
    got = gemma.sequence_logprobs(SENTENCES)
    for text, out in zip(SENTENCES, got, strict=True):
        ids = [gemma.tok.bos_token_id, *gemma.tok(text, add_special_tokens=False)["input_ids"]]
        assert out["token_ids"] == ids
        with torch.inference_mode():
            logits = gemma.model(torch.tensor([ids])).logits[0].double()
        logp = torch.log_softmax(logits, dim=-1)
        expected = [float(logp[t - 1, ids[t]]) for t in range(1, len(ids))]
        assert out["logprobs"][0] is None
        assert max(abs(a - b) for a, b in zip(out["logprobs"][1:], expected, strict=True)) <= 1e-4


def test_minimal_pair_logprobs_are_sensible(gemma: HFCausalBackend) -> None:
    """A grammatical sentence is more probable than its ungrammatical twin (BLiMP-style)."""
    good, bad = gemma.sequence_logprobs(["The keys to the cabinet are on the table.",
                                         "The keys to the cabinet is on the table."])
    assert sum(good["logprobs"][1:]) > sum(bad["logprobs"][1:])


def test_chat_probe_on_gemma_is_a_one_line_error(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", "spec=fisco_gender", "model=gemma3_270m", *isolation(workdir))
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "gemma3_270m.yaml" in lines[0] and "generate" in lines[0]
    assert "Traceback" not in err and not run_dirs(workdir)


def test_tp_run_on_gemma_names_the_model_and_carries_the_licence(workdir: Path, cli, gemma: HFCausalBackend) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 2)
    models = Path(compose([]).config.runtime.cache).resolve().parent / "models"
    code, out, err = cli("run", "--fail-on", "never", f"spec={spec}", "model=gemma3_270m", *isolation(workdir),
                         f"runtime.models_dir={models}")
    assert code == 0, err
    (run,) = run_dirs(workdir)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["model"]["name"] == "gemma-3-270m-q4_k_m"
    assert summary["model"]["identity"]["sha256"] == gemma.cfg.gguf_sha256
    for report in ("report.html", "report.md"):
        assert "Gemma Terms of Use" in (run / report).read_text()


@pytest.mark.parametrize("broken", ["row-causal mask", "positions along the row"])
def test_the_packing_check_catches_a_wrong_mask_or_wrong_positions(gemma: HFCausalBackend, broken: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The check that decides between packed and padded scoring has the power to see the
    mistakes an architecture could make with a packed row (measured: 2 nats or more on
    the probe texts, against a 0.5 tolerance in half precision, 1e-4 in float32)."""
    from biasaudit.backends import packed_scoring

    assert gemma._packing_is_exact()
    real = packed_scoring._tensors

    def wrong(rows, pad_id):  # type: ignore[no-untyped-def]
        ids, pos, mask, cols = real(rows, pad_id)
        if broken == "row-causal mask":
            mask = torch.tril(torch.ones(mask.shape[-1], mask.shape[-1], dtype=torch.bool)).expand_as(mask).clone()
        else:
            pos = torch.arange(ids.shape[1]).expand_as(pos).clone()
        return ids, pos, mask, cols

    monkeypatch.setattr(packed_scoring, "_tensors", wrong)
    assert not gemma._packing_is_exact()
