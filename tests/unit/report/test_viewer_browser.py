"""`biasaudit view` in headless Chromium (issue 29, acceptance 1): the page loads, each
filter changes the rows shown to the ones it should, an estimate's link shows the
responses behind it, the sort by item difference orders them, pages turn; and with
hostile stimuli and answers nothing runs, nothing loads, no console message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import IMG, SCRIPT_BREAK, hostile_run, page_data, tp_spec, verdict_code
from tests.report_checks import chromium_or_skip

pytestmark = pytest.mark.slow  # headless Chromium

# Page helpers defined by the first step: choose a filter's value (as a user would, with a
# change event) and read back (cards on the page, the "N of M" count).
HELPERS = """(() => {
  window.shown = () => [document.querySelectorAll('#rows article').length,
                        Number(document.getElementById('count').getAttribute('data-count'))];
  window.choose = (name, value) => {
    const s = document.getElementById('f-' + name);
    s.value = value;
    s.dispatchEvent(new Event('change'));
    return window.shown();
  };
  window.estimate = (metric, name) => {
    const tr = [...document.querySelectorAll('#estimates tbody tr')].find(
      r => r.cells[1].textContent === metric && r.cells[2].textContent === name && r.cells[3].textContent === 'pooled');
    tr.querySelector('button').click();
    return window.shown();
  };
  return window.shown();
})()"""


def _load(page: Path, steps: list[str]):  # type: ignore[no-untyped-def]
    from tests.browser import load_page

    res = load_page(page, steps=(HELPERS, *steps))
    assert res.console == [], f"console messages: {res.console}"
    assert res.exceptions == [], f"exceptions: {res.exceptions}"
    assert res.requests == [page.resolve().as_uri()], f"requests beyond the file: {res.requests}"
    return res.values


def test_filters_links_and_hostile_text_in_chromium(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    chromium_or_skip()
    run = hostile_run(workdir, cli)
    assert cli("view", str(run))[0] == 0
    page = run / "viewer.html"
    data = page_data(page.read_text(encoding="utf-8"))
    rows = data["rows"]
    summary = json.loads((run / "summary.json").read_text())
    worst = next(v for v in summary["verdicts"] if v["over"] == "worst_cell")
    n_b = sum(r["groups"].get("category") == "b" for r in rows)
    n_refuse = sum(any(c["layer"] == "refusal" and c["code"] == "refuse" for c in r["codes"]) for r in rows)
    n_worst = sum(r["cell"] == worst["cell"] for r in rows)
    values = _load(page, [
        "window.choose('group', 'category=b')",
        "window.choose('group', '')",
        "window.choose('label', 'refusal=refuse')",
        "window.choose('label', '')",
        f"window.choose('verdict', {json.dumps(worst['verdict'])})",
        "window.choose('verdict', '')",
        "window.estimate('refusal_rate', 'rate.category.b')",
        "document.getElementById('estimate-banner').hidden",
        "document.getElementById('clear-estimate').click(); window.shown()",
        "(() => { const q = document.getElementById('f-q'); q.value = 'Group C'; q.dispatchEvent(new Event('input'));"
        " return window.shown(); })()",
        # nothing the data holds ran or loaded; it is on the page as text
        "typeof window.__pwned",
        "[document.images.length, document.scripts.length]",
        "(() => { const q = document.getElementById('f-q'); q.value = ''; q.dispatchEvent(new Event('input'));"
        " return document.getElementById('rows').textContent; })()",
    ])
    assert values[0] == [8, 8] and len(rows) == 8
    assert values[1] == [n_b, n_b] and 0 < n_b < 8
    assert values[2] == [8, 8]
    assert values[3] == [n_refuse, n_refuse] == [1, 1]
    assert values[5] == [n_worst, n_worst] and 0 < n_worst < 8
    assert values[7] == [n_b, n_b]  # the group estimate's responses: the group's
    assert values[8] is False  # the banner says which estimate they are behind
    assert values[9] == [8, 8]
    assert values[10] == [2, 2]  # stimulus s3, in both cells
    assert values[11] == "undefined"
    assert values[12] == [0, 2]
    text = values[13]
    assert SCRIPT_BREAK in text and IMG in text and "{{ config.__class__ }}" in text


def test_sort_by_item_difference_and_pages_in_chromium(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    chromium_or_skip()
    spec = tp_spec(workdir, 30)  # 60 responses: two pages of 50
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    assert cli("view", str(run))[0] == 0
    page = run / "viewer.html"
    data = page_data(page.read_text(encoding="utf-8"))
    diffs = [r["items"]["bias_score"] for r in data["rows"]]
    chips = "[...document.querySelectorAll('#rows .chip.diff')].map(c => Number(c.textContent.split(' ').pop()))"
    values = _load(page, [
        "window.choose('sort', 'absdiff')",
        chips,
        "document.getElementById('next-page').click(); window.shown()",
        chips,
        "window.choose('sort', 'diffasc')",
        chips,
    ])
    assert values[0] == values[1] == [50, 60] and len(diffs) == 60  # plan order, then sorted: same count
    first, second = values[2], values[4]
    assert values[3] == [10, 60]
    want = sorted(diffs, key=lambda d: -abs(d))
    assert first + second == pytest.approx([round(d, 4) for d in want], abs=1e-4)
    assert values[5] == [50, 60]  # a new order starts again at the first page
    assert values[6] == pytest.approx([round(d, 4) for d in sorted(diffs)[:50]], abs=1e-4)


def test_scoring_cards_render_in_chromium(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Issue 41, readable outputs: a token-probability card shows both sentences with their
    totals, one marked as the winner, the tokens decoded and folded (test_viewer_cards.py
    checks the numbers); the hostile sentence shows as text."""
    from tests.unit.report.test_viewer_cards import HOSTILE_MORE, scored_run

    chromium_or_skip()
    run = scored_run(workdir, cli)
    assert cli("view", str(run))[0] == 0
    page = run / "viewer.html"
    data = page_data(page.read_text(encoding="utf-8"))
    card = """(() => { const a = document.querySelector('#rows article');
      return [[...a.querySelectorAll('table.sentences tbody tr')].map(
                r => [r.getAttribute('data-slot'), r.cells[1].textContent, r.cells[2].textContent, r.classList.contains('won')]),
              a.querySelector('details.tokens').open, a.querySelector('details.tokens code.tok:nth-child(1)') !== null,
              [...a.querySelectorAll('details.tokens code.tok')].map(c => c.textContent).join('|'),
              a.querySelectorAll('pre.output').length, window.__pwned === undefined]; })()"""
    [_, got] = _load(page, [card])
    first = data["rows"][0]["scoring"]
    assert got[0] == [[s["slot"], s["text"], f"{s['total']:.3f}", s["slot"] == first["winner"]]
                      for s in first["sentences"]]
    assert got[0][0][1] == HOSTILE_MORE and sum(r[3] for r in got[0]) == 1
    assert got[1] is False and got[2] is True  # folded, and there
    assert "\u0120" not in got[3] and " " in got[3]  # byte-level markers read as spaces
    assert got[4] == 0 and got[5] is True  # no raw JSON; nothing ran
