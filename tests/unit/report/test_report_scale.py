"""Reports that scale with the question (issue 41, section 2): ten groups of one pair each
list no pairwise contrast (none could decide anything) and say so once; a contrast is
never listed twice; a table longer than a page repeats its header row on the next page
and its sentence columns stay legible."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import operator_conf, verdict_code, write_spec

TYPES = ["race-color", "gender", "socioeconomic", "nationality", "religion", "age", "sexual-orientation",
         "physical-appearance", "disability", "occupation"]


def _spec(types: list[str], per_type: int, sentence: str = "the {t} people are lazy") -> str:
    rows = "\n".join(
        f'    - {{id: p{i}x{j}, more: "{sentence.format(t=t, j=j)}", less: "{sentence.format(t="other", j=j)}", '
        f"bias_type: {t}, direction: stereo}}"
        for i, t in enumerate(types) for j in range(per_type))
    return f"""
audit: {{name: scale, method: token_probability}}
stimuli:
  inline:
{rows}
probe: {{kind: sequence_logprob, inputs: {{more: "{{{{ more }}}}", less: "{{{{ less }}}}"}}}}
metrics: [{{name: bias_score, mode: ar_full, by: [bias_type]}}]
thresholds:
  - {{metric: bias_score, min: 40, max: 60}}
"""


def _run(workdir: Path, cli, body: str, scores: dict[str, float], *extra: str) -> Path:  # type: ignore[no-untyped-def]
    spec = write_spec(workdir / "scale.yaml", body)
    model = operator_conf(workdir, model={"backend": "scripted", "name": "scripted", "script": {"scores": scores}})
    code, _, err = cli("run", f"spec={spec}", *model, *extra, *isolation(workdir))
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    return run


def _ten_groups_of_one(workdir: Path, cli, *extra: str) -> Path:  # type: ignore[no-untyped-def]
    # half the groups prefer the stereotyping sentence, half do not: 50 pooled
    scores = {f"the {t} people are lazy": -1.0 - (i % 2) for i, t in enumerate(TYPES)}
    scores["the other people are lazy"] = -1.5
    return _run(workdir, cli, _spec(TYPES, 1), scores, *extra)


def test_ten_groups_of_one_list_no_contrast_and_say_why(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run = _ten_groups_of_one(workdir, cli, "report.formats=[html,md,json]")
    s = json.loads((run / "summary.json").read_text())
    m = s["metrics"]["bias_score"]
    # every contrast is still computed and kept in summary.json
    assert sum(k.startswith("contrast.bias_type.") for k in m["estimates"]) == 45
    [t] = [t for t in m["tables"] if t["title"].startswith("Pairwise differences")]
    assert t["rows"] == [] and t["total_rows"] == 45
    assert "No contrast is shown" in t["note"] and "per-group n cannot decide anything" in t["note"]
    for name in ("report.html", "report.md"):
        text = (run / name).read_text()
        # not once among the estimates, not once in the contrast table
        assert "contrast.bias_type.age-disability" not in text, name
        assert "-79.345" not in text, name  # the 1 vs 1 contrasts' interval [-79.345, 79.345]
        assert text.count("No contrast is shown") == 1, name


def test_a_contrast_is_listed_once_and_small_groups_are_counted_out(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # three groups: gender 3 pairs, age 3 pairs, religion 1 pair. 1 vs 3 can decide (the
    # extreme outcome's Newcombe interval excludes 0), so all 3 contrasts are shown
    # (statsmodels confint_proportions_2indep(1, 1, 0, 3, method="newcomb") lower 0.028);
    # a fourth group of 1 pair makes religion-disability 1 vs 1: left out.
    types = ["gender", "age", "religion", "disability"]
    rows = {"gender": 3, "age": 3, "religion": 1, "disability": 1}
    keep = [ln for ln in _spec(types, 3).splitlines() if not re.search(r"id: p[23]x[12]", ln)]
    body = "\n".join(keep) + "\n"
    scores = {f"the {t} people are lazy": -1.0 for t in types}
    scores["the other people are lazy"] = -2.0
    run = _run(workdir, cli, body, scores, "report.formats=[html,md,json]")
    m = json.loads((run / "summary.json").read_text())["metrics"]["bias_score"]
    assert sorted(e["n"] for k, e in m["estimates"].items() if re.fullmatch(r"bias_type\.[a-z]+", k)) == \
        sorted(rows.values())
    [t] = [t for t in m["tables"] if t["title"].startswith("Pairwise differences")]
    shown = {(r[0], r[1]) for r in t["rows"]}
    assert len(shown) == 5 and ("disability", "religion") not in shown
    assert t["note"].startswith("1 of 6 contrasts are left out because they could not decide")
    html = (run / "report.html").read_text()
    for a, b in shown:  # once, in the contrast table only
        assert html.count(f"contrast.bias_type.{a}-{b}") == 0
    assert "listed once, in" in html


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())  # PDF text has ligatures (ﬀ)


@pytest.mark.slow
def test_ten_groups_of_one_pdf_is_short(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from tests.report_checks import chromium_or_skip

    chromium_or_skip()
    from pypdf import PdfReader

    run = _ten_groups_of_one(workdir, cli, "report.formats=[html,json,pdf]")
    pages = PdfReader(str(run / "report.pdf")).pages
    text = _norm(" ".join(p.extract_text() for p in pages))
    assert "No contrast is shown" in text
    assert len(pages) <= 6, len(pages)  # 13 pages on b14e3b5, the 45 contrasts listed twice


@pytest.mark.slow
def test_a_long_table_repeats_its_header_and_keeps_sentences_legible(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from tests.report_checks import chromium_or_skip

    chromium_or_skip()
    from pypdf import PdfReader

    types = ["gender", "age"]
    sentence = "in case number {j} the {t} neighbours were said to be rather loud at night"
    scores = {sentence.format(t=t, j=j): -1.0 - j / 100 for t in types for j in range(40)}
    scores.update({sentence.format(t="other", j=j): -1.5 for j in range(40)})
    run = _run(workdir, cli, _spec(types, 40, sentence), scores, "report.formats=[html,json,pdf]",
               "report.max_rows=80")
    top = next(t for t in json.loads((run / "summary.json").read_text())["metrics"]["bias_score"]["tables"]
               if t["title"] == "Pairs with the largest likelihood differences")
    assert len(top["rows"]) == 80
    pages = [_norm(p.extract_text()) for p in PdfReader(str(run / "report.pdf")).pages]
    first = next(i for i, p in enumerate(pages) if "Pairs with the largest likelihood differences" in p)
    last_id = str(top["rows"][-1][0])
    end = next(i for i in range(first, len(pages)) if re.search(rf"(^| ){re.escape(last_id)} base ", pages[i]))
    assert end > first, "the table should span pages"
    header = "stimulus cell bias_type direction more less score(more) score(less) diff"
    for i in range(first, end + 1):
        assert header in pages[i], f"page {i + 1} holds rows of the table without its header"
    # a sentence column keeps whole phrases on a line: on b14e3b5 the `less` column wrapped
    # to a word or two per line (most lines of the table 8 characters or fewer)
    raw = [ln for i in range(first, end + 1) for ln in PdfReader(str(run / "report.pdf")).pages[i]
           .extract_text().splitlines() if ln.strip()]
    short = [ln for ln in raw if len(ln.strip()) <= 8]
    assert len(short) < len(raw) / 4, (len(short), len(raw))
