"""Issue 19 (from issue 18): `model=hf_causal model.path=DIR` audits a plain transformers
directory (no GGUF options). A tiny Llama with random weights and SmolLM2's tokenizer,
saved to disk: its scores equal a direct forward pass, and the report names the model by
its path, or by `model.name` when given."""

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

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_causal_dir(tmp_path_factory: pytest.TempPathFactory, smollm2: HFCausalBackend) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("tiny-causal")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(smollm2.tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, bos_token_id=smollm2.tok.bos_token_id,
                      eos_token_id=smollm2.tok.eos_token_id)
    LlamaForCausalLM(cfg).save_pretrained(out)
    smollm2.tok.save_pretrained(out)
    return out


def test_own_directory_scores_like_a_direct_forward_pass(tiny_causal_dir: Path) -> None:
    c = compose(["model=hf_causal", f"model.path={tiny_causal_dir}"])
    assert c.config.model.name == str(tiny_causal_dir)  # named by its path
    b = build_backend(c.config.model, c.config.runtime)
    assert isinstance(b, HFCausalBackend)
    text = "The nurse said she would be back with the medicine."
    (out,) = b.sequence_logprobs([text])
    ids = out["token_ids"]
    with torch.inference_mode():
        logp = torch.log_softmax(b.model(torch.tensor([ids])).logits[0].double(), dim=-1)
    expected = [float(logp[t - 1, ids[t]]) for t in range(1, len(ids))]
    assert out["logprobs"][1:] == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("name", [None, "my-model"])
def test_report_names_the_own_model(workdir: Path, cli, tiny_causal_dir: Path, name: str | None) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 2)
    extra = [f"model.name={name}"] if name else []
    code, out, err = cli("run", "--fail-on", "never", f"spec={spec}", "model=hf_causal", f"model.path={tiny_causal_dir}", *extra,
                         *isolation(workdir))
    assert code == 0, err
    (run,) = run_dirs(workdir)
    summary = json.loads((run / "summary.json").read_text())
    label = name or str(tiny_causal_dir)
    assert summary["model"]["name"] == label
    assert summary["model"]["identity"]["dir_sha256"]  # content-addressed, not by path
    assert label in (run / "report.html").read_text()


def test_missing_path_is_a_one_line_error(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", "spec=crows_pairs_tp", "model=hf_causal", *isolation(workdir))
    assert code == 2 and "model.path" in err and len(err.strip().splitlines()) == 1
