"""The float32 copy a managed engine serves: the embedded SmolLM2 GGUF with every tensor
dequantized exactly as gguf-py dequantizes it for the in-process backend, its metadata kept
(but `general.file_type`), made once and reused, nothing half-written left behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from biasaudit.backends import gguf_exact
from biasaudit.backends.gguf_exact import as_shipped_gguf, exact_gguf
from biasaudit.backends.model_files import gguf_sha256
from biasaudit.errors import BackendError
from biasaudit.spec import HFCausalConfig, RuntimeConfig

REPO = Path(__file__).resolve().parents[3]


def _smollm2() -> HFCausalConfig:
    return HFCausalConfig(**yaml.safe_load((REPO / "conf" / "model" / "smollm2.yaml").read_text()))


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RuntimeConfig]:
    rt = RuntimeConfig(models_dir=str(tmp_path_factory.mktemp("models")))
    return exact_gguf(_smollm2(), rt), rt


def _fields(reader: Any) -> dict[str, Any]:
    return {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}


@pytest.mark.slow  # dequantizes the embedded SmolLM2 GGUF
def test_copy_holds_the_dequantized_tensors_and_the_metadata(copy: tuple[Path, RuntimeConfig]) -> None:
    from gguf import GGMLQuantizationType, GGUFReader
    from gguf.quants import dequantize

    path, rt = copy
    cfg = _smollm2()
    src = GGUFReader(as_shipped_gguf(cfg, rt))
    out = GGUFReader(path)
    assert path == Path(rt.models_dir or "") / "gguf-f32" / gguf_sha256(cfg) / "SmolLM2-135M-Instruct.Q4_1.f32.gguf"
    assert {t.tensor_type for t in out.tensors} == {GGMLQuantizationType.F32}
    assert {t.tensor_type for t in src.tensors} > {GGMLQuantizationType.F32}  # the source is quantized
    assert [t.name for t in out.tensors] == [t.name for t in src.tensors]
    assert [list(t.shape) for t in out.tensors] == [list(t.shape) for t in src.tensors]
    by_name = {t.name: t for t in src.tensors}
    names = ["token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_down.weight", "blk.29.attn_norm.weight",
             "output_norm.weight"]
    for t in out.tensors:
        if t.name in names:
            s = by_name[t.name]
            assert np.array_equal(t.data.reshape(-1), dequantize(s.data, s.tensor_type).reshape(-1)), t.name
    got, want = _fields(out), _fields(src)
    assert want["general.file_type"] != 0 and got.pop("general.file_type") == 0
    want.pop("general.file_type")
    assert got == want


@pytest.mark.slow  # dequantizes the embedded SmolLM2 GGUF
def test_second_call_reuses_the_copy(copy: tuple[Path, RuntimeConfig]) -> None:
    path, rt = copy
    stamp = path.stat().st_mtime_ns
    assert exact_gguf(_smollm2(), rt) == path and path.stat().st_mtime_ns == stamp
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_a_model_without_a_gguf_file_is_refused(tmp_path: Path) -> None:
    cfg = HFCausalConfig(backend="hf_causal", name="plain", path=str(tmp_path))
    with pytest.raises(BackendError) as err:
        exact_gguf(cfg, RuntimeConfig(models_dir=str(tmp_path / "models")))
    assert "model.serve needs a GGUF model (model.gguf_file)" in str(err.value)
    assert err.value.key == "model.gguf_file"


@pytest.mark.slow  # reads the embedded SmolLM2 GGUF
def test_a_copy_over_the_size_limit_is_refused_and_leaves_nothing(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gguf_exact, "MAX_F32_BYTES", 1 << 20)
    rt = RuntimeConfig(models_dir=str(tmp_path))
    with pytest.raises(BackendError) as err:
        exact_gguf(_smollm2(), rt)
    assert "over the" in str(err.value) and "GiB limit" in str(err.value)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    (tmp_path / "m.gguf").write_bytes(b"not a gguf file at all" * 10)
    cfg = HFCausalConfig(backend="hf_causal", name="bad", path=str(tmp_path), gguf_file="m.gguf")
    with pytest.raises(BackendError) as err:
        exact_gguf(cfg, RuntimeConfig(models_dir=str(tmp_path / "models")))
    assert "not a readable GGUF file" in str(err.value)
    assert [p for p in (tmp_path / "models").rglob("*") if p.is_file()] == []
