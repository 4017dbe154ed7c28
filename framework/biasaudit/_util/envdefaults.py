"""Environment defaults for a run, set once, before transformers or the Hub client is
imported: nothing is downloaded at run time (models are local paths or `pkg:` packages),
and the libraries' own progress bars and warnings stay out of biasaudit's output.
`setdefault`: a variable the user has set is left as it is."""

from __future__ import annotations

import os

DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    # weight-loading bars from transformers interleave with our own per-run progress lines
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}


def apply() -> None:
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)


__all__ = ["DEFAULTS", "apply"]
