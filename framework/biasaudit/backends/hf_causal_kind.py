"""The `hf_causal` backend kind: a causal LM in this process (`hf_causal.py`), or, with
`serve`, the same model served by a managed inference engine (`served.py`). Registered
here, apart from both, so that neither imports the other."""

from __future__ import annotations

from biasaudit.backends.base import BACKENDS, BackendKind
from biasaudit.backends.hf_causal import HFCausalBackend
from biasaudit.backends.hf_causal import _identity as local_identity
from biasaudit.spec import HFCausalConfig

_FIRST_GGUF_LOAD = ("no load timed on this cache yet: the GGUF file is dequantized once, on this first use (its time "
                    "grows with the file's size and the machine's load: a minute or more for SmolLM2-135M on 2 busy "
                    "cores), and kept under runtime.models_dir so later loads take seconds; a line every 15 s "
                    "while it runs")


def _first_load(cfg: HFCausalConfig) -> str:
    return _FIRST_GGUF_LOAD if cfg.gguf_file else ""


def _served_kind() -> BackendKind[HFCausalConfig]:
    """The same model served by a managed inference engine (`serve`): its identity is the
    in-process one (the weights) plus the engine's; one engine per model for the process."""
    from biasaudit.backends.served import ServedBackend, served_identity

    return BackendKind(config=HFCausalConfig, supports=HFCausalBackend.supports,
                       identity=lambda cfg: served_identity(cfg, local_identity(cfg)), build=ServedBackend, local=False,
                       label_logprobs=True, keep_loaded=True, first_load_note=_first_load)


BACKENDS.add(
    "hf_causal",
    BackendKind(
        config=HFCausalConfig,
        supports=HFCausalBackend.supports,
        identity=local_identity,
        build=lambda cfg, rt: HFCausalBackend(cfg, rt),
        local=True,
        label_logprobs=True,
        keep_loaded=True,
        variant=lambda cfg: _served_kind() if cfg.serve is not None else None,
        first_load_note=_first_load,
    ),
)
