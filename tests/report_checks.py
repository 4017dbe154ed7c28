"""Checks every run's report must pass: the shared layout, and every number the HTML
shows is a number in summary.json (rounded as displayed), so summary.json is the
complete machine-readable record of the report."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SECTIONS = ("cover", "summary", "method", "conditions", "reliability", "quality", "reproducibility", "trail")
# A number standing alone: not part of a word, hash, version string or date component.
NUMBER = re.compile(r"(?<![\w.\-/:])-?\d+(?:\.\d+)?(?![\w.\-/:])")
# Numbers written into the template itself ("95% CI").
TEMPLATE_CONSTANTS = {"95"}


def visible_text(html: str) -> str:
    html = re.sub(r"<svg.*?</svg>", " ", html, flags=re.S)
    html = re.sub(r"<style.*?</style>", " ", html, flags=re.S)
    html = re.sub(r"<head.*?</head>", " ", html, flags=re.S)
    html = re.sub(r"<[^>]+>", " ", html)
    import html as h

    return h.unescape(html)


def _flatten(x: Any, nums: list[float], strings: list[str]) -> None:
    if isinstance(x, dict):
        for k, v in x.items():
            strings.append(str(k))
            _flatten(v, nums, strings)
    elif isinstance(x, list):
        for v in x:
            _flatten(v, nums, strings)
    elif isinstance(x, bool) or x is None:
        return
    elif isinstance(x, int | float):
        nums.append(float(x))
    else:
        strings.append(str(x))


def unexplained_numbers(html: str, summary: dict[str, Any]) -> list[str]:
    nums: list[float] = []
    strings: list[str] = []
    _flatten(summary, nums, strings)
    text_tokens = set(TEMPLATE_CONSTANTS)
    for s in strings:
        text_tokens.update(NUMBER.findall(s))
    formatted = {d: {f"{x:.{d}f}" for x in nums} for d in range(0, 11)}
    bad = []
    for tok in NUMBER.findall(visible_text(html)):
        if tok in text_tokens:
            continue
        d = len(tok.split(".")[1]) if "." in tok else 0
        if tok in formatted.get(d, set()) or (tok.startswith("-") and tok[1:] in formatted.get(d, set())
                                               and f"{0:.{d}f}" == tok[1:]):
            continue
        bad.append(tok)
    return bad


def check_report(run_dir: Path) -> dict[str, Any]:
    """Assert the shared layout and the summary/HTML number identity; returns the summary."""
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    for sec in SECTIONS:
        assert f'id="{sec}"' in html, f"{run_dir}: section {sec} missing"
    for key in ("cover", "executive", "method", "conditions", "reliability", "quality", "reproducibility", "trail"):
        assert key in summary, f"{run_dir}: summary.json lacks {key}"
    assert "<script" not in html.lower(), "a report never contains script tags"
    bad = unexplained_numbers(html, summary)
    assert not bad, f"{run_dir}: numbers shown in report.html but not in summary.json: {bad[:20]}"
    return summary


def chromium_or_skip() -> None:
    """CI installs Chromium (.ci/run), so there a missing browser is a failure."""
    import os

    import pytest

    from biasaudit.report.pdf import find_chromium

    if find_chromium() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must have chromium (see .ci/run)")
        pytest.skip("chromium is not installed")


def check_in_browser(run_dir: Path, report: str = "report.html") -> None:
    """Headless Chromium loads the report: no console errors or warnings, no exceptions,
    no request but the file itself, and a screenshot that is not blank."""
    import io

    from PIL import Image

    from tests.browser import load_page

    chromium_or_skip()
    page = run_dir / report
    res = load_page(page)
    assert res.console == [], f"console messages: {res.console}"
    assert res.exceptions == [], f"exceptions: {res.exceptions}"
    # data: URIs are inline content (matplotlib embeds a colour bar as one), not requests
    fetched = [u for u in res.requests if not u.startswith("data:")]
    assert fetched == [page.resolve().as_uri()], f"requests beyond the file: {fetched}"
    img = Image.open(io.BytesIO(res.screenshot)).convert("L")
    hist = img.histogram()
    non_white = sum(hist[:240]) / max(1, sum(hist))
    assert img.size[0] > 0 and non_white > 0.01, "screenshot is blank"
