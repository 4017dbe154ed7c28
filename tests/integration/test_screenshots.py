"""`make screenshots` (docs/tools/screenshots.py, issue 29 acceptance 6, issue 41 acceptance
5): the tool runs its audits, writes the viewers and captures every picture docs/img holds
(the viewer, a token-probability card, the report's first page and blocks), each a real,
small PNG of the part it names. Run here with the scripted model (canned answers) to keep
it short; tests/unit/docs/test_doc_images.py checks that the docs show exactly these."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.report_checks import chromium_or_skip

pytestmark = pytest.mark.slow  # two audits in a subprocess and seven Chromium loads


def test_screenshots_tool_writes_every_picture_the_docs_show(tmp_path: Path) -> None:
    chromium_or_skip()
    from PIL import Image

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "framework"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(REPO / "docs/tools/screenshots.py"), str(tmp_path), "--model", "scripted",
                           "--n", "2", "--cache", str(tmp_path / "cache.sqlite")], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from tests.unit.docs.test_doc_images import MAX_IMG_BYTES, shots

    shown = set(re.findall(r"\]\(img/([\w.-]+\.png)\)", (REPO / "docs/viewer.md").read_text(encoding="utf-8")))
    assert shown == {p.name for p in tmp_path.glob("*.png")} == set(shots()) and len(shown) == 7
    for name in shown:
        assert (tmp_path / name).stat().st_size <= MAX_IMG_BYTES, name
        img = Image.open(tmp_path / name).convert("L")
        hist = img.histogram()
        assert img.size[0] >= 600 and img.size[1] >= 100, name
        assert sum(hist[:200]) / sum(hist) > 0.005, f"{name} is blank"  # text on the page
        assert (REPO / "docs/img" / name).is_file(), f"docs/img/{name} is not committed"
    card = Image.open(tmp_path / "viewer-token-card.png").convert("RGB")
    # the winner's green chip (viewer.css `.chip.won`, #d7eed9), within the palette's rounding
    assert any(max(abs(a - b) for a, b in zip(c, (215, 238, 217), strict=True)) <= 3
               for _, c in card.getcolors(4096) or [])
