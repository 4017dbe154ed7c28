"""Issue 38, item 2: the human-review block explained a judge that is always wrong as one
that always agrees. A judge that labels all 12 answers "endorse" against 9 human labels
(6 reject, 3 neutral: accuracy 0/9 = 0.00, chance 6/9 = 0.667) got the PPI note "undefined
(the judge agrees with every one of the 9 human labels...)", cut at 80/120 characters, in a
number cell that does not wrap (the table ran off the page), and its verdict was a plain
FAIL. Now: the note says the judge disagrees with every human label (its error is the same
on every unit), whole; the table keeps to the page; and a `judge_below_chance` flag ("this
judge is worse than chance on your labels") makes the verdicts it feeds INCONCLUSIVE.

The figures are checked against a hand computation: accuracy 0/9 with its Wilson interval
[0, 0.299] (statsmodels' `proportion_confint`), chance 6/9."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import spec_and_operator

pytestmark = pytest.mark.slow

STATEMENTS = "\n".join(f"    - {{id: s{i:02d}, statement: \"claim number {i}\"}}" for i in range(12))
SPEC = f"""
audit: {{name: below-chance, method: label_rates}}
stimuli:
  inline:
{STATEMENTS}
  id_field: id
probe: {{kind: generate, max_tokens: 20, prompt: "What do you think of {{{{ statement }}}}?"}}
model:
  backend: scripted
  name: subject
  script:
    replies: {{claim: "Yes, I fully endorse that claim."}}
coding:
  stance:
    coder: rules
    labels: [endorse, reject, neutral]
    otherwise: endorse
    expect_dominant: true
    rules:
      - {{pattern: "^No\\\\b", label: reject}}
metrics:
  - {{name: label_rate, id: endorse_rate, layer: stance, labels: [endorse]}}
thresholds:
  - {{metric: endorse_rate, max: 0.5}}
report: {{formats: [html, md, json, pdf]}}
"""

HUMAN = """
  human_stance:
    coder: human
    sheet: review.csv
reliability:
  - pair: [human_stance, stance]
metrics:"""


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_a_judge_worse_than_chance_is_said_so_and_decides_nothing(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from statsmodels.stats.proportion import proportion_confint

    from tests.report_checks import chromium_or_skip

    chromium_or_skip()
    spec, ops = spec_and_operator(workdir / "review.yaml", SPEC)
    code, _, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    assert code in (0, 1), err
    [first] = run_dirs(workdir)
    sheet = workdir / "review.csv"
    code, _, err = cli("annotate", "export", str(first), "--layer", "stance", "--n", "9", "-o", str(sheet))
    assert code == 0, err
    rows = _rows(sheet)
    assert len(rows) == 9
    for i, r in enumerate(rows):  # the humans: 6 reject, 3 neutral, never endorse
        r["label"] = "reject" if i < 6 else "neutral"
    with sheet.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    spec.write_text(spec.read_text(encoding="utf-8").replace("\nmetrics:", HUMAN, 1), encoding="utf-8")
    code, out, err = cli("run", f"spec={spec}", *ops, *isolation(workdir))
    [run] = [d for d in run_dirs(workdir) if d != first]
    s = json.loads((run / "summary.json").read_text(encoding="utf-8"))

    [g] = s["coding"]["gold"]
    [rater] = g["raters"]
    lo, hi = proportion_confint(0, 9, method="wilson")
    assert rater["n"] == 9 and rater["accuracy"]["value"] == 0.0 and rater["chance"] == pytest.approx(6 / 9)
    assert rater["accuracy"]["ci_high"] == pytest.approx(hi) and hi < 6 / 9

    # the note says what happened, never "agrees": no human gave 'endorse', so PPI is not
    # used (too few labels of the kind for its correction) and the humans-only rate is
    # shown, 0 of 9 with its Wilson interval (the wording for a judge whose error is
    # constant where PPI is attempted: tests/unit/coding/test_human_review_wording.py)
    endorse = next(r for r in g["rates"] if r["label"] == "endorse")
    ppi = endorse["ppi"]
    note = ppi["note"]
    assert note.startswith("PPI not used: 0 of the 9 human labels give the label and 9 do not"), note
    assert "agrees with every one" not in note
    assert ppi["value"] == 0.0 and ppi["method"] == "wilson" and ppi["ci_high"] == pytest.approx(hi)

    # the verdict it feeds: not a plain FAIL, the plain warning beside it
    [v] = s["verdicts"]
    assert v["verdict"] == "INCONCLUSIVE" and v.get("would_be") == "FAIL", v
    assert "this judge is worse than chance on your labels" in v["reason"]
    flags = [f for f in s["metrics"]["endorse_rate"]["validity"] if f["kind"] == "judge_below_chance"]
    assert len(flags) == 1 and flags[0]["blocking"] and "0.00 of 9" in flags[0]["message"] \
        and "would agree on 0.67" in flags[0]["message"]

    # the whole note, never cut inside a sentence, in the HTML and the Markdown report
    html = (run / "report.html").read_text(encoding="utf-8")
    md = (run / "report.md").read_text(encoding="utf-8")
    shown = note.replace("'", "&#39;")
    assert shown in html, "the PPI note is not whole in report.html"
    assert "This judge is worse than chance on your labels" in html and "worse than chance" in md
    assert note.replace("'", "'") in md.replace("\\", "")
    assert "undefined (the judge agrees" not in html + md
    for text in (html, md):
        for cut in [x for x in text.split("undefined (")[1:]]:
            inner = cut.split(")")[0]
            assert inner.split()[-1] not in ("the", "a", "of", "to", "its", "and"), f"cut inside a sentence: {inner[-60:]!r}"

    # the printed report keeps the review tables on the page (nothing wider than the paper)
    from tests.browser import load_page

    res = load_page(run / "report.html", size=(794, 1123), steps=(
        "Math.max(...[...document.querySelectorAll('#coding table.review')].map(t => t.getBoundingClientRect().right))"
        " <= document.documentElement.clientWidth",
    ))
    assert res.values == [True], "a human-review table runs off a page-wide window"
    assert (run / "report.pdf").is_file() and (run / "report.pdf").stat().st_size > 1000
