"""Device, dtype and memory choices for local torch models: the device (`auto` picks
CUDA, then Apple's MPS, then the CPU), the weights' dtype, and on CUDA a token budget
for scoring batches sized from the memory that is free when the model is loaded."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

DTYPES = ("float32", "float16", "bfloat16", "auto")


def pick_device(requested: str) -> str:
    import torch

    if requested != "auto":
        return requested
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def torch_dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "auto": "auto"}[name]


def torch_setup(device: str, dtype: str, threads: int | None) -> tuple[str, Any]:
    """The device to use and the torch dtype, with torch's thread count set if asked."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    return pick_device(device), torch_dtype(dtype)


def bytes_per_scored_token(model_config: Any, dtype_bytes: int) -> int:
    """Peak memory one scored token costs in a forward pass without gradients: its logits
    row dominates for large vocabularies: the model's dtype, the float32 copy the
    log-prob reads from (half precision only) and the log-sum-exp's float32 temporary;
    the layer activations (hidden state, attention and MLP intermediates of one layer at
    a time, as inference frees each layer's) add the rest. The budget divides free memory
    by it. (Leaving out the log-sum-exp temporary sized bfloat16 Gemma 3 batches ~40%
    too large: out of memory on an 80 GB H100, seen in bench/gpu_scoring.py.)"""
    vocab = int(getattr(model_config, "vocab_size", 50_000))
    hidden = int(getattr(model_config, "hidden_size", 1024))
    inter = int(getattr(model_config, "intermediate_size", 4 * hidden) or 4 * hidden)
    logits = vocab * (dtype_bytes + (4 if dtype_bytes < 4 else 0) + 4)
    layer = (8 * hidden + 3 * inter) * dtype_bytes
    return logits + layer


def cuda_token_budget(device: str, model_config: Any, dtype_bytes: int, fraction: float,
                      floor: int = 256, ceiling: int = 1 << 20) -> int:
    """Tokens per scoring batch that fit in `fraction` of the GPU memory free now (after
    the weights are loaded), between `floor` and `ceiling`."""
    import torch

    free, _total = torch.cuda.mem_get_info(torch.device(device))
    budget = int(free * fraction) // bytes_per_scored_token(model_config, dtype_bytes)
    chosen = max(floor, min(ceiling, budget))
    log.info("token budget on %s: %d tokens (%.1f GiB free, %.0f%% used for batches)", device, chosen,
             free / 2**30, 100 * fraction)
    return chosen
