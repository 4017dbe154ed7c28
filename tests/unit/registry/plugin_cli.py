"""The biasaudit command line in a fresh process that finds tests/fixtures/plugin_example
only through its entry point (its folder on PYTHONPATH, no pip install): shared by the
plug-in tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PLUGIN = REPO / "tests" / "fixtures" / "plugin_example"


def plugin_env(with_plugin: bool = True) -> dict[str, str]:
    parts = ([str(PLUGIN)] if with_plugin else []) + [str(REPO / "framework"), str(REPO)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(parts), "HF_HUB_OFFLINE": "1",
            "BIASAUDIT_CHROMIUM": "/nonexistent/chromium"}  # no PDF: seconds saved


def plugin_cli(cwd: Path, *args: str, with_plugin: bool = True) -> subprocess.CompletedProcess[str]:
    # `-c`, not `-m biasaudit.cli.app`: runpy's warning about the re-imported module would
    # be a second line on stderr, and the one-line error is part of what is checked
    code = "import sys; from biasaudit.cli.app import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=plugin_env(with_plugin),
                          capture_output=True, text=True, timeout=600)
