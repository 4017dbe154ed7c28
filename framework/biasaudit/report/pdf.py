"""PDF and PNG renderings of a report through headless Chromium (print-to-pdf,
screenshot). Chromium is optional: without it these formats say how to get it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from biasaudit._util.fileio import write_output_file
from biasaudit.errors import BiasAuditError

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
# No network, no first-run work, no GPU: the page is one local self-contained file.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
         "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--hide-scrollbars",
         "--mute-audio"]


def find_chromium() -> str | None:
    env = os.environ.get("BIASAUDIT_CHROMIUM")
    if env:
        return env if Path(env).is_file() else None
    for n in _NAMES:
        p = shutil.which(n)
        if p:
            return p
    return None


def _run(args: list[str], out: Path, timeout: float) -> None:
    exe = find_chromium()
    if exe is None:
        raise BiasAuditError("headless Chromium is not installed", key="report.formats",
                             hint="install it (Debian: apt-get install chromium) or set BIASAUDIT_CHROMIUM")
    # Chromium's helper processes can outlive the browser for a moment and still write to
    # the profile; a leftover temporary folder must not fail a finished render.
    with tempfile.TemporaryDirectory(prefix="biasaudit-chromium-", ignore_cleanup_errors=True) as profile:
        cmd = [exe, *FLAGS, f"--user-data-dir={profile}", *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
        tail = (proc.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise BiasAuditError(f"Chromium could not render {out.name}: {tail[0]}", file=str(out),
                             hint="run the same with BIASAUDIT_CHROMIUM pointing at a working Chromium")


def html_to_pdf(html: Path, pdf: Path, timeout: float = 120) -> None:
    """Print the report. Chromium's own header and footer stay off (they would print the
    file's local path); page numbers come from the report's CSS `@page` margin box, and
    its print rules keep headings with the content they introduce."""
    with tempfile.TemporaryDirectory(prefix="biasaudit-print-") as scratch:  # Chromium prints here, then
        tmp = Path(scratch) / "report.pdf"                                  # the one writer copies it
        _run(["--no-pdf-header-footer", f"--print-to-pdf={tmp}", html.resolve().as_uri()], tmp, timeout)
        write_output_file(pdf, tmp.read_bytes(), key="report.formats", what="PDF report", ours=True, streams=False)


def html_to_png(html: Path, png: Path, width: int = 1200, height: int = 1600, timeout: float = 120) -> None:
    with tempfile.TemporaryDirectory(prefix="biasaudit-print-") as scratch:
        tmp = Path(scratch) / "page.png"
        _run([f"--screenshot={tmp}", f"--window-size={width},{height}", html.resolve().as_uri()], tmp, timeout)
        write_output_file(png, tmp.read_bytes(), key="report", what="screenshot", ours=True, streams=False)
