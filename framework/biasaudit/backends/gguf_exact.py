"""The GGUF file a managed engine serves.

`exact_gguf`: a float32 copy of a quantized GGUF, every tensor dequantized the way the
in-process backend dequantizes it (gguf-py's `dequantize`, as transformers does). llama.cpp
computing on the quantized file also quantizes activations, which moves per-token
log-probs by up to ~0.2 nats; served from this copy, the same weights give the in-process
numbers (to ~1e-5 nats). `as_shipped_gguf`: the file itself, for `native` weights.

The copy is made once into `models_dir/gguf-f32/<sha256 of the source>/` (a temporary file
renamed into place: a killed run never leaves a half-written model behind)."""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from biasaudit._util.fileio import publish
from biasaudit.backends.base import resolve_model_path
from biasaudit.backends.model_files import gguf_sha256, joined_gguf, models_dir
from biasaudit.errors import BackendError
from biasaudit.spec import HFCausalConfig, RuntimeConfig

log = logging.getLogger(__name__)

# A model file declares its own tensor shapes: a damaged or hostile one could ask for a
# float32 copy far larger than any real model of this project (Gemma 3 270M is ~1 GiB).
MAX_F32_BYTES = 64 << 30
ALL_F32 = 0  # llama.cpp's `general.file_type` for a model whose tensors are all F32


def source_gguf(cfg: HFCausalConfig, runtime: RuntimeConfig) -> Path:
    """The model's GGUF file as shipped (joined from its pieces first for a split one)."""
    if not cfg.gguf_file:
        raise BackendError("model.serve needs a GGUF model (model.gguf_file)", key="model.gguf_file",
                           hint="serve a model config that names a GGUF file, e.g. model=smollm2")
    where = joined_gguf(cfg, runtime) if cfg.gguf_parts else resolve_model_path(cfg.path or "")
    if not isinstance(where, Path):  # a hub id: a GGUF is served from a local file only
        raise BackendError(f"model.serve needs a local GGUF file; {cfg.path!r} is a hub id", key="model.path",
                           hint="give a local directory or a pkg: path holding the GGUF file")
    f = where / cfg.gguf_file
    if not f.is_file():
        raise BackendError(f"GGUF file {cfg.gguf_file!r} not found in {where}", key="model.gguf_file")
    return f


def as_shipped_gguf(cfg: HFCausalConfig, runtime: RuntimeConfig) -> Path:
    """The quantized file itself (`native` weights: llama.cpp's own numbers)."""
    return source_gguf(cfg, runtime)


def exact_gguf(cfg: HFCausalConfig, runtime: RuntimeConfig) -> Path:
    """A float32 copy of the model's GGUF, made once and reused."""
    src = source_gguf(cfg, runtime)
    target_dir = models_dir(runtime) / "gguf-f32" / gguf_sha256(cfg)
    # named after the file, not `cfg.name`: configs naming the same file share one copy
    target = target_dir / f"{Path(src.name).stem}.f32.gguf"
    if target.is_file():
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # written in a private scratch folder beside it, then moved in by the one writer
    with tempfile.TemporaryDirectory(prefix=".f32-", dir=target_dir) as scratch:
        tmp = Path(scratch) / target.name
        _write_f32_copy(src, tmp)
        publish(tmp, target, key="runtime.models", what="float32 model copy")
    log.info("wrote a float32 copy of %s in %.1f s: %s", src.name, time.perf_counter() - t0, target)
    return target


def _write_f32_copy(src: Path, dst: Path) -> None:
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
    from gguf.quants import dequantize

    try:
        reader = GGUFReader(src)
        arch = reader.fields["general.architecture"].contents()
    except (ValueError, KeyError, IndexError, OSError) as exc:
        raise BackendError(f"{src.name} is not a readable GGUF file: {type(exc).__name__}: {str(exc)[:200]}",
                           key="model.gguf_file", hint="reinstall the model packages (`make setup`)") from exc
    total = 4 * sum(int(t.n_elements) for t in reader.tensors)
    if total > MAX_F32_BYTES:
        raise BackendError(f"{src.name}: a float32 copy would take {total / 2**30:.1f} GiB, over the "
                           f"{MAX_F32_BYTES >> 30} GiB limit", key="model.gguf_file",
                           hint="serve this model with its own weights (native) instead of an exact copy")

    writer = GGUFWriter(dst, arch=arch, endianess=reader.endianess)
    for name, field in reader.fields.items():
        # the header counts are written by the writer; the architecture it adds itself
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if name == "general.file_type":
            continue
        vtype = field.types[0]
        if vtype == GGUFValueType.ARRAY:
            writer.add_key_value(name, field.contents(), vtype, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, field.contents(), vtype)
        if name == "general.alignment":  # tensor data must sit where the key says
            writer.data_alignment = int(field.contents())
    writer.add_uint32("general.file_type", ALL_F32)

    # tensor infos first, then the data tensor by tensor: memory holds one dequantized
    # tensor at a time, not the whole float32 model
    f32 = np.dtype(np.float32)
    for t in reader.tensors:
        shape = [int(x) for x in reversed(t.shape)]  # GGUF lists dimensions innermost first
        writer.add_tensor_info(t.name, shape, f32, 4 * int(t.n_elements), raw_dtype=GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    try:
        for t in reader.tensors:
            data: Any = dequantize(t.data, t.tensor_type)
            writer.write_tensor_data(np.ascontiguousarray(data, dtype=np.float32))
    except NotImplementedError as exc:  # a quantization type gguf-py cannot dequantize
        raise BackendError(f"{src.name}: {exc}", key="model.gguf_file",
                           hint="serve this model with its own weights (native) instead of an exact copy") from exc
    finally:
        writer.close()
