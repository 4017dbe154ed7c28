"""Is this process a Jupyter kernel? (progress bars and HTML summaries switch on it)."""

from __future__ import annotations

import sys


def in_notebook() -> bool:
    """True inside a Jupyter kernel (a notebook, JupyterLab, VS Code's notebooks, Colab):
    IPython is loaded and its current shell has a kernel. Plain `python`, a terminal
    IPython and pytest are not notebooks."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    if get is None:
        return False
    try:
        shell = get()
    except Exception:  # a half-initialised or stubbed IPython is not a kernel
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None
