"""`make screenshots` (docs/tools/screenshots.py, issue 29 acceptance 6): the tool runs its
audit, writes the viewer and captures every picture the docs show, each a real PNG of the
part it names. Run here with the scripted model (canned answers) to keep it short."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.report_checks import chromium_or_skip

pytestmark = pytest.mark.slow  # an audit in a subprocess and five Chromium loads


def test_screenshots_tool_writes_every_picture_the_docs_show(tmp_path: Path) -> None:
    chromium_or_skip()
    from PIL import Image

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "framework"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(REPO / "docs/tools/screenshots.py"), str(tmp_path), "--model", "scripted",
                           "--n", "2"], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shown = set(re.findall(r"\]\(img/([\w.-]+\.png)\)", (REPO / "docs/viewer.md").read_text(encoding="utf-8")))
    assert shown == {p.name for p in tmp_path.glob("*.png")} and len(shown) == 5
    for name in shown:
        img = Image.open(tmp_path / name).convert("L")
        hist = img.histogram()
        assert img.size[0] >= 600 and img.size[1] >= 100, name
        assert sum(hist[:200]) / sum(hist) > 0.005, f"{name} is blank"  # text on the page
        assert (REPO / "docs/img" / name).is_file(), f"docs/img/{name} is not committed"
