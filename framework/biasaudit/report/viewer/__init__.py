"""`biasaudit view`: a run's (or a suite's) responses, codes and estimates in one
self-contained HTML page (`page.py` says why a file, and how untrusted text stays inert)."""

from __future__ import annotations

from pathlib import Path

from biasaudit.report.viewer.load import MAX_ROWS, load_view
from biasaudit.report.viewer.model import ViewData
from biasaudit.report.viewer.page import render_page

VIEWER_FILE = "viewer.html"


def write_viewer(folder: Path, out: Path | None = None, *, max_rows: int = MAX_ROWS,
                 force: bool = False) -> tuple[Path, ViewData]:
    """Write the viewer of a run or suite folder (default: `<folder>/viewer.html`); the
    output path is checked before the folder is read (`fileio`'s one writer: never through
    a link; `<folder>/viewer.html` is the folder's own and refreshed, an `--out` file is
    replaced only when it is a page biasaudit wrote, or with `force`). Returns the path
    and the data."""
    from biasaudit._util.fileio import HTML_MARKER, check_output_file, write_output_file

    target = out if out is not None else folder / VIEWER_FILE
    key = "--out" if out is not None else "view"
    ours = HTML_MARKER if out is not None else True
    check_output_file(target, key=key, what="viewer file", streams=True, force=force, ours=ours)
    data = load_view(folder, max_rows=max_rows)
    write_output_file(target, render_page(data), key=key, what="viewer file", force=force, ours=ours)
    return target, data


__all__ = ["MAX_ROWS", "VIEWER_FILE", "ViewData", "load_view", "render_page", "write_viewer"]
