"""Review in the viewer page (issue 41, section 1 and acceptance 1) in headless Chromium:
label two responses in the page, flag a third with a comment that a spreadsheet would
run as a formula, download the review sheet (the download captured from the browser),
read it back with a `human` coding layer, and the report gives agreement on those units,
with no humans-only rate and no PPI estimate (the reviewer chose them: a convenience
sample). The expected agreement figures come from scikit-learn and statsmodels on the
labels the test itself gave."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.proportion import proportion_confint

from tests.conftest import isolation, run_dirs
from tests.helpers import read_jsonl, spec_and_operator
from tests.report_checks import chromium_or_skip

pytestmark = pytest.mark.slow  # headless Chromium and two runs

SPEC = """
audit: {name: inpage, method: label_rates}
stimuli:
  inline:
    - {id: a1, group: A, statement: "alpha one"}
    - {id: a2, group: A, statement: "alpha two"}
    - {id: b1, group: B, statement: "beta one"}
    - {id: b2, group: B, statement: "beta two"}
  id_field: id
factors:
  framing:
    ask: {template: "What about {{ statement }}?"}
probe: {kind: generate, max_tokens: 20}
model:
  backend: scripted
  name: subject
  script:
    replies: {alpha: "I cannot answer that.", beta: "=HYPERLINK(\\"x\\") sure, here it is."}
coding:
  refusal:
    coder: rules
    labels: [refuse, answer]
    label_meanings: {refuse: declines to answer, answer: answers}
    otherwise: answer
    rules:
      - {pattern: "^I cannot", label: refuse}
metrics:
  - {name: label_rate, id: refusal_rate, layer: refusal, labels: [refuse], by: [group]}
"""

HUMAN = """
  human_refusal:
    coder: human
    sheet: {sheet}
reliability:
  - pair: [human_refusal, refusal]
metrics:"""

NOTE = '=HYPERLINK("http://x") "quoted", and a comma'

# The page's controls, as a reviewer uses them: choose a label, tick the flag, type a note.
STEPS = """(() => {
  const card = (stim) => [...document.querySelectorAll('#rows article')].find(
    a => [...a.querySelectorAll('.chip')].some(c => c.textContent === 'stimulus ' + stim));
  window.label = (stim, value) => {
    const s = card(stim).querySelector('select.review-label');
    s.value = value;
    s.dispatchEvent(new Event('change'));
  };
  window.flag = (stim, note) => {
    const b = card(stim).querySelector('input.review-flag-box');
    b.checked = true;
    b.dispatchEvent(new Event('change'));
    const n = card(stim).querySelector('input.review-note');
    n.value = note;
    n.dispatchEvent(new Event('input'));
  };
  window.note = (stim, note) => {
    const n = card(stim).querySelector('input.review-note');
    n.value = note;
    n.dispatchEvent(new Event('input'));
  };
  return document.querySelectorAll('#rows .review select').length;
})()"""


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_label_in_the_page_download_import_and_agreement(workdir: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    chromium_or_skip()
    from tests.browser import load_page

    spec, ops = spec_and_operator(workdir / "inpage.yaml", SPEC)
    code, _, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    assert code == 0, err
    [run] = run_dirs(workdir)
    assert cli("view", str(run))[0] == 0
    page = run / "viewer.html"
    got = tmp_path / "downloads"
    got.mkdir()
    # a1: the rules say refuse and so does the reviewer; b1: the rules say answer, the
    # reviewer refuse; b2 flagged with a note a spreadsheet would run, no label
    res = load_page(page, steps=(
        STEPS,
        "window.label('a1', 'refuse'); window.label('b1', 'refuse'); window.note('a1', '=1+1 @me');"
        f" window.flag('b2', {json.dumps(NOTE)}); document.getElementById('review-saves').textContent",
        "document.querySelector('#review-saves button').click(); document.getElementById('review-links').textContent",
    ), downloads=(got, 2))
    assert res.console == [] and res.exceptions == [], (res.console, res.exceptions)
    assert res.requests == [page.resolve().as_uri()]  # the download is the page's own blob, nothing fetched
    assert res.values[0] == 4  # every answered response can be labelled
    assert "2 labelled, 1 flagged, 3 row(s)" in res.values[1]
    assert "Saved 3 row(s)" in res.values[2]

    sheets = sorted(got.iterdir())
    assert [p.name.endswith(x) for p, x in zip(sheets, (".csv", ".csv.sample.json"), strict=True)] == [True, True]
    sheet, record = sheets
    raw = sheet.read_text(encoding="utf-8")
    rows = _rows(sheet)
    assert list(rows[0]) == ["unit_id", "prompt", "answer", "machine_label", "rationale", "allowed_labels", "label",
                             "note"]
    by_unit = {r["unit_id"].split("|")[1]: r for r in rows}
    assert set(by_unit) == {"a1", "b1", "b2"}
    # model text and the reviewer's note are data: a formula's first character defused with
    # an apostrophe, as `annotate export` does, quotes doubled inside quoted cells
    assert by_unit["b1"]["answer"].startswith("'=HYPERLINK")
    assert by_unit["b2"]["note"] == "flagged: " + NOTE and by_unit["b2"]["label"] == ""
    assert '"flagged: =HYPERLINK(""http://x"") ""quoted"", and a comma"' in raw
    assert by_unit["a1"]["note"] == "'=1+1 @me" and '"\'=1+1 @me"' in raw
    assert by_unit["a1"]["allowed_labels"] == "refuse = declines to answer | answer = answers"
    assert (by_unit["a1"]["machine_label"], by_unit["b1"]["machine_label"]) == ("refuse", "answer")
    rec = json.loads(record.read_text(encoding="utf-8"))
    assert rec["selection"] == "chosen" and rec["seed"] is None and rec["layer"] == "refusal"
    assert rec["format_version"] == 2  # the viewer's record states its layout (issue 40)
    assert rec["run_id"] == json.loads((run / "summary.json").read_text())["run_id"]

    # read back as a `human` layer: the second run answers from the cache and codes it
    spec.write_text(spec.read_text(encoding="utf-8").replace("\nmetrics:", HUMAN.format(sheet=sheet), 1),
                    encoding="utf-8")
    code, _, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    assert code == 0, err
    [second] = [d for d in run_dirs(workdir) if d != run]
    [g] = json.loads((second / "summary.json").read_text(encoding="utf-8"))["coding"]["gold"]
    assert (g["selection"], g["sampled"], g["annotated"], g["blank"], g["population"]) == ("chosen", 3, 2, 1, 4)
    [rater] = g["raters"]
    human, machine = ["refuse", "refuse"], ["refuse", "answer"]
    assert rater["n"] == 2 and rater["accuracy"]["value"] == pytest.approx(0.5)
    lo, hi = proportion_confint(1, 2, method="wilson")  # one unit per stimulus: the plain Wilson interval
    assert (rater["accuracy"]["ci_low"], rater["accuracy"]["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert rater["kappa"]["value"] == pytest.approx(cohen_kappa_score(human, machine))
    assert rater["confusion"] == confusion_matrix(human, machine, labels=["refuse", "answer"]).tolist()
    for r in g["rates"]:  # a convenience sample: no rate over all units from it
        assert r["ppi"]["value"] is None and "chosen by a reviewer in the viewer" in r["ppi"]["note"]
        assert r["human"]["value"] is None and "convenience sample" in r["human"]["note"]
        assert r["judge"]["value"] is not None
    notes = {c["unit"].split("|")[1]: c["detail"].get("note") for c in read_jsonl(second / "codes.jsonl")
             if c["layer"] == "human_refusal" and c["detail"].get("sampled")}
    assert notes == {"a1": "=1+1 @me", "b1": None, "b2": None}  # read back unquoted; a blank row's note is not kept
    html = (second / "report.html").read_text(encoding="utf-8")
    assert "Human review: <code>refusal</code> against <code>human_refusal</code>" in html
    assert "chosen by a reviewer in the viewer, not drawn at random: a convenience sample" in html


def test_hostile_answers_go_to_the_sheet_intact(workdir: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Every response of the hostile run (markup, `</script>`, NUL and other controls,
    U+2028, a 10000-character answer cut in its card) labelled in the page and
    downloaded: the sheet reads back with every answer and prompt matching the hashes the
    record carries (any byte the page's csv writer changed would be refused)."""
    chromium_or_skip()
    from biasaudit.coding.human_sheet import read_sheet
    from biasaudit.spec import RuntimeLimits
    from tests.browser import load_page
    from tests.helpers import LONG, hostile_run

    run = hostile_run(workdir, cli)
    assert cli("view", str(run))[0] == 0
    page = run / "viewer.html"
    got = tmp_path / "downloads"
    got.mkdir()
    res = load_page(page, steps=(
        "(() => { const s = document.getElementById('review-layer'); s.value = 'refusal';"
        " s.dispatchEvent(new Event('change'));"
        " const boxes = [...document.querySelectorAll('#rows select.review-label')];"
        " boxes.forEach(b => { b.value = 'answer'; b.dispatchEvent(new Event('change')); });"
        " return boxes.length; })()",
        "document.querySelector('#review-saves button').click(); typeof window.__pwned",
    ), downloads=(got, 2))
    assert res.console == [] and res.exceptions == [], (res.console, res.exceptions)
    assert res.values == [8, "undefined"]
    sheet = next(p for p in got.iterdir() if p.suffix == ".csv")
    filled = read_sheet(sheet, RuntimeLimits())
    assert len(filled.rows) == 8 and {r.label for r in filled.rows.values()} == {"answer"}
    assert any(r.answer == LONG.strip() for r in filled.rows.values())  # whole, not the card's cut text
