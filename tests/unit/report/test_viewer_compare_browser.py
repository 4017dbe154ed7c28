"""The compare page in headless Chromium (issue 41, acceptance 1, compare): two runs of
different models; the stimulus that differs most comes first, with both models' answers
side by side; the filters change the stimuli shown; model text holding markup and script
is shown as text, nothing runs, nothing loads, no console message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import IMG, SCRIPT_BREAK, page_data
from tests.report_checks import chromium_or_skip
from tests.unit.report.compare_runs import HOSTILE_ANSWER, ORDER, REPLIES, two_model_runs

pytestmark = pytest.mark.slow  # headless Chromium and two runs

HELPERS = """(() => {
  window.order = () => [...document.querySelectorAll('#rows article')].map(a => a.getAttribute('data-stimulus'));
  window.count = () => Number(document.getElementById('count').getAttribute('data-count'));
  window.choose = (name, value) => {
    const s = document.getElementById('f-' + name);
    s.value = value;
    s.dispatchEvent(new Event('change'));
    return window.order();
  };
  window.columns = (stimulus, cell) => {
    const art = document.querySelector('#rows article[data-stimulus="' + stimulus + '"]');
    const unit = [...art.querySelectorAll('.unit')].find(u => u.querySelector('.head .chip').textContent === cell);
    return [...unit.querySelectorAll('.col')].map(c => [c.getAttribute('data-run'),
      c.querySelector('pre.answer').textContent, [...c.querySelectorAll('tr.differs')].length]);
  };
  return window.order();
})()"""


def test_two_models_side_by_side_differs_most_first_in_chromium(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from tests.browser import load_page

    chromium_or_skip()
    run_a, run_b = two_model_runs(workdir, cli)
    code, out, err = cli("view", str(run_a), str(run_b), "--out", str(workdir / "cmp.html"))
    assert code == 0, err
    page = workdir / "cmp.html"
    data = page_data(page.read_text(encoding="utf-8"))
    assert [r["model"] for r in data["runs"]] == ["model-a", "model-b"]
    res = load_page(page, steps=(
        HELPERS,
        "window.columns('s2', 'framing=opinion')",
        "window.columns('s3', 'framing=opinion')",
        "window.choose('show', 'codes')",
        "window.choose('show', 'answers')",
        "window.choose('show', '')",
        "window.choose('group', 'category=b')",
        "window.choose('group', '')",
        "window.choose('label', 'refusal=refuse')",
        "window.choose('label', '')",
        "window.choose('sort', 'plan')",
        "(() => { const q = document.getElementById('f-q'); q.value = 'mostly'; q.dispatchEvent(new Event('input'));"
        " return window.order(); })()",
        "typeof window.__pwned",
        "[document.images.length, document.scripts.length, document.querySelectorAll('b').length]",
    ))
    assert res.console == [], f"console messages: {res.console}"
    assert res.exceptions == [], f"exceptions: {res.exceptions}"
    assert res.requests == [page.resolve().as_uri()], f"requests beyond the file: {res.requests}"
    v = res.values
    assert v[0] == ORDER  # the stimulus that differs most first (known from the scripted models' replies)
    cell = data["entries"][0]["units"][0]["cell"]
    assert cell == "framing=opinion"
    # both answers, side by side, the differing code marked in both columns
    assert v[1] == [["A", REPLIES["model-a"]["Opinion: Group B"], 1], ["B", REPLIES["model-b"]["Opinion: Group B"], 1]]
    assert v[2] == [["A", REPLIES["model-a"]["Opinion: Group C"], 1], ["B", HOSTILE_ANSWER, 1]]  # shown as text
    assert v[3] == ["s2", "s3"] and v[4] == ["s2", "s3", "s1"] and v[5] == ORDER
    assert v[6] == ["s3", "s4"] and v[7] == ORDER
    assert v[8] == ["s2", "s3"] and v[9] == ORDER
    assert v[10] == ["s1", "s2", "s3", "s4"]
    assert v[11] == ["s1"]
    assert v[12] == "undefined"
    assert v[13] == [0, 2, 0]
    assert SCRIPT_BREAK in HOSTILE_ANSWER and IMG in HOSTILE_ANSWER
    assert json.dumps(HOSTILE_ANSWER) not in page.read_text(encoding="utf-8")  # escaped in the data element
