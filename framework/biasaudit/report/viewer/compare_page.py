"""The compare page: one self-contained HTML file, built like the single-run viewer's
(`page.py` says how untrusted text stays inert: JSON in a non-executable element with
`<`, `>`, `&` escaped, DOM calls and `textContent` only, a Content-Security-Policy that
allows only the page's own script and style by their sha256)."""

from __future__ import annotations

from pathlib import Path

from biasaudit.report.viewer.compare import COMPARE_FILE, CompareData, load_compare
from biasaudit.report.viewer.load import MAX_ROWS
from biasaudit.report.viewer.page import embed_json, html_page


def render_compare(data: CompareData) -> str:
    # the viewer's style, then the compare page's own: one <style>, one hash
    return html_page(title="biasaudit compare", scripts=("dom.js", "compare.js"),
                     styles=("viewer.css", "compare.css"), payload=embed_json(data.model_dump(mode="json")),
                     noscript="The compare page needs JavaScript; each run's viewer.html, items.csv and responses.jsonl "
                              "hold the same content without it.")


def write_compare(folders: list[Path], out: Path, *, max_rows: int = MAX_ROWS, force: bool = False,
                  explicit: bool = False, base: Path | None = None) -> tuple[Path, CompareData]:
    """Write the compare page of `folders` to `out` (checked before any run is read;
    replaced only when it is a page biasaudit wrote, or with `force`; `explicit`: the
    path came from `--out`)."""
    from biasaudit._util.fileio import HTML_MARKER, check_output_file, write_output_file

    key = "--out" if explicit else "view"
    check_output_file(out, key=key, what="compare page", streams=True, force=force, ours=HTML_MARKER)
    data = load_compare(folders, max_rows=max_rows, base=base)
    write_output_file(out, render_compare(data), key=key, what="compare page", force=force, ours=HTML_MARKER)
    return out, data


__all__ = ["COMPARE_FILE", "render_compare", "write_compare"]
