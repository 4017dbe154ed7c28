"""Headless Chromium: a scripted run's report loads cleanly, a page that breaks the rules
is caught by the same check, and the PDF renders with pages."""

from __future__ import annotations

import html
import re
import unicodedata
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import tp_spec, verdict_code
from tests.report_checks import check_in_browser, chromium_or_skip
from tests.unit.report.test_report_layout import GRID_SPEC, SCORES, _with_script

pytestmark = pytest.mark.slow  # headless Chromium


@pytest.fixture
def grid_run(workdir: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    spec, model = _with_script(workdir / "grid.yaml", GRID_SPEC, scores=SCORES)
    code, _, err = cli("run", f"spec={spec}", *model, "report.formats=[html,md,json,pdf]", *isolation(workdir))
    assert code == verdict_code(run_dirs(workdir)[0]), err
    return run_dirs(workdir)[0]


def test_report_loads_cleanly_and_pdf_has_pages(grid_run: Path) -> None:
    chromium_or_skip()
    check_in_browser(grid_run)
    from pypdf import PdfReader

    reader = PdfReader(str(grid_run / "report.pdf"))
    assert len(reader.pages) >= 2
    text = "".join(p.extract_text() for p in reader.pages)
    assert "Executive summary" in text and "MEASURE 2.11" in text


def test_the_browser_check_catches_external_requests_and_errors(tmp_path: Path) -> None:
    chromium_or_skip()
    bad = tmp_path / "report.html"
    bad.write_text('<!DOCTYPE html><html><body><p>x</p><img src="http://127.0.0.1:9/pixel.png">'
                   "<script>console.error('boom')</script></body></html>", encoding="utf-8")
    from tests.browser import load_page

    res = load_page(bad)
    assert any("boom" in c for c in res.console)
    assert "http://127.0.0.1:9/pixel.png" in res.requests
    with pytest.raises(AssertionError):
        check_in_browser(tmp_path)


def _headings(html_text: str) -> set[str]:
    return {_norm(html.unescape(re.sub(r"<[^>]+>", "", m)))
            for m in re.findall(r"<h[1-4][^>]*>(.*?)</h[1-4]>", html_text, re.S)}


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())  # PDF text has ligatures (ﬀ)


def test_pdf_pages_are_numbered_and_no_page_ends_with_a_heading(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    chromium_or_skip()
    from pypdf import PdfReader

    spec = tp_spec(workdir, 40)  # long tables: several page breaks
    code, _, err = cli("run", f"spec={spec}", "model=scripted", "report.formats=[html,pdf]", *isolation(workdir))
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    heads = _headings((run / "report.html").read_text())
    pages = PdfReader(str(run / "report.pdf")).pages
    assert len(pages) >= 3
    for i, page in enumerate(pages, 1):
        lines = [_norm(ln) for ln in page.extract_text().splitlines() if ln.strip()]
        assert f"Page {i} of {len(pages)}" in lines
        content = [ln for ln in lines if not re.fullmatch(r"Page \d+ of \d+", ln)]
        assert content[-1] not in heads, f"page {i} ends with the heading {content[-1]!r}"
