"""Report sign-off (issue 29, point 5): the auditor's scope, limitations, name and date in
every report, escaped; "not stated" when left out; the PDF in A4 or Letter with no
heading left at the foot of a page; a run stage time that covers the coding stage; and
`audit.method` checked against the registered methods."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import spec_and_operator, tp_spec, verdict_code
from tests.report_checks import chromium_or_skip
from tests.unit.cli.test_cli_errors import assert_clean_failure

PLANTED = "<script>alert('scope')</script> & [link](http://x.invalid)"


def _run(workdir: Path, cli, *extra: str, n: int = 5, spec: Path | None = None) -> Path:  # type: ignore[no-untyped-def]
    spec = spec or tp_spec(workdir, n)
    code, out, err = cli("run", f"spec={spec}", "model=scripted", *extra, *isolation(workdir))
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    return run


def _signoff_html(html: str) -> str:
    m = re.search(r'<section class="signoff" id="signoff">(.*?)</section>', html, re.S)
    assert m, "no sign-off block in report.html"
    return m.group(1)


def _signoff_md(md: str) -> str:
    m = re.search(r"^## Scope, limitations and sign-off\n(.*?)^## ", md, re.S | re.M)
    assert m, "no sign-off block in report.md"
    return m.group(1)


def test_signoff_block_is_rendered_and_escaped(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 5)
    # scope and date in the spec file (an unquoted YAML date), the rest on the command line
    doc = spec.read_text().replace("method: token_probability}", "method: token_probability, date: 2026-01-31}")
    doc = doc.replace("audit: {", "audit: {scope: " + json.dumps(PLANTED + "\n# not a heading\n- not a list") + ", ")
    spec.write_text(doc, encoding="utf-8")
    run = _run(workdir, cli, "report.formats=[html,md]", "audit.auditor='Jane <b>Doe</b>'",
               "audit.limitations='Five pairs only | <img src=x onerror=alert(1)>'", spec=spec)

    block = _signoff_html((run / "report.html").read_text(encoding="utf-8"))
    assert "<script>" not in block and "<img" not in block and "<b>" not in block
    assert "&lt;script&gt;alert(&#39;scope&#39;)&lt;/script&gt; &amp; [link]" in block
    assert "Jane &lt;b&gt;Doe&lt;/b&gt;" in block and "2026-01-31" in block
    assert "&lt;img src=x onerror=alert(1)&gt;" in block and "not stated" not in block

    md = _signoff_md((run / "report.md").read_text(encoding="utf-8"))
    assert "<script>" not in md and "<img" not in md and "<b>" not in md
    assert "&lt;script&gt;alert('scope')&lt;/script&gt; &amp; \\[link\\](http://x.invalid)" in md
    # a line of the text cannot open a heading or a list, nor split the table
    assert "\n\\# not a heading" in md and "\n\\- not a list" in md
    assert "Five pairs only \\| &lt;img" in md
    assert "| Auditor | Jane &lt;b&gt;Doe&lt;/b&gt; |" in md and "| Sign-off date | 2026-01-31 |" in md
    assert "not stated" not in md

    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert summary["cover"]["auditor"] == "Jane <b>Doe</b>" and summary["cover"]["signoff_date"] == "2026-01-31"


def test_missing_fields_say_not_stated(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    run = _run(workdir, cli, "report.formats=[html,md]")
    block = _signoff_html((run / "report.html").read_text(encoding="utf-8"))
    assert block.count("<em>not stated</em>") == 4
    md = _signoff_md((run / "report.md").read_text(encoding="utf-8"))
    assert md.count("_not stated_") == 4


@pytest.mark.parametrize(("override", "key", "words"), [
    ("audit.date=2026-02-30", "audit.date", "not a calendar date"),
    ("audit.date=31/01/2026", "audit.date", ""),
    ("audit.auditor=" + "x" * 201, "audit.auditor", ""),
])
def test_bad_signoff_values_are_located_errors(workdir: Path, cli, override: str, key: str,  # type: ignore[no-untyped-def]
                                                words: str) -> None:
    spec = tp_spec(workdir, 3)
    line = assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", override, *isolation(workdir)),
                                workdir, key)
    assert words in line


def test_overlong_scope_in_the_spec_is_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    spec.write_text(spec.read_text().replace("audit: {", "audit: {scope: " + "a" * 5001 + ", "), encoding="utf-8")
    assert_clean_failure(cli("validate", f"spec={spec}"), workdir, str(spec), "audit.scope")


def test_misspelled_method_is_a_located_error_with_a_suggestion(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    spec.write_text(spec.read_text().replace("method: token_probability", "method: token_probabilty"), encoding="utf-8")
    line = assert_clean_failure(cli("validate", f"spec={spec}"), workdir, str(spec), "audit.method",
                                "'token_probabilty'", "did you mean 'token_probability'")
    assert line.count("\n") == 0
    # and from an override, before anything is run
    spec = tp_spec(workdir, 3)
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", "audit.method=bbqq", *isolation(workdir)),
                         workdir, "audit.method", "did you mean 'bbq'")


def _pdf_checks(run: Path) -> list[tuple[float, float]]:
    """Page sizes of report.pdf, after checking that no page ends with a heading (the
    print CSS keeps every heading with the table, plot or paragraph it introduces)."""
    from pypdf import PdfReader

    from tests.unit.report.test_report_browser import _headings, _norm

    heads = _headings((run / "report.html").read_text(encoding="utf-8"))
    pages = PdfReader(str(run / "report.pdf")).pages
    assert len(pages) >= 3
    for i, page in enumerate(pages, 1):
        lines = [_norm(ln) for ln in page.extract_text().splitlines() if ln.strip()]
        content = [ln for ln in lines if not re.fullmatch(r"Page \d+ of \d+", ln)]
        assert content and content[-1] not in heads, f"page {i} ends with the heading {content[-1]!r}"
    return [(float(p.mediabox.width), float(p.mediabox.height)) for p in pages]


@pytest.mark.parametrize(("paper", "size"), [(None, (595.0, 842.0)), ("letter", (612.0, 792.0)),
                                             ("a4", (595.0, 842.0))])
@pytest.mark.slow  # prints PDFs with headless Chromium
def test_pdf_paper_size(workdir: Path, cli, paper: str | None, size: tuple[float, float]) -> None:  # type: ignore[no-untyped-def]
    chromium_or_skip()
    extra = [f"report.paper={paper}"] if paper else []
    run = _run(workdir, cli, "report.formats=[html,pdf]", "audit.scope=Gender and age pairs",
               *extra, n=40)  # long tables: several page breaks
    for w, h in _pdf_checks(run):
        assert abs(w - size[0]) < 2 and abs(h - size[1]) < 2, (w, h, paper)
    html = (run / "report.html").read_text(encoding="utf-8")
    assert f"size: {'letter' if paper == 'letter' else 'A4'};" in html


def test_unknown_paper_is_refused(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 3)
    assert_clean_failure(cli("run", f"spec={spec}", "model=scripted", "report.paper=a5", *isolation(workdir)),
                         workdir, "report.paper")


CODED = """
audit: {name: coded, method: label_rates}
stimuli:
  inline:
    - {id: s1, statement: "Group X is lazy.", category: a}
    - {id: s2, statement: "Group Y is rude.", category: b}
  id_field: id
probe: {kind: generate, max_tokens: 20, prompt: "Opinion: {{ statement }}"}
model:
  backend: scripted
  name: subject
  script: {replies: {"Opinion: Group X": "I'm sorry, I cannot discuss that."}}
coding:
  refusal:
    coder: rules
    labels: [refuse, answer]
    otherwise: answer
    rules: [{keywords: ["I'm sorry"], label: refuse}]
metrics:
  - {name: label_rate, id: refusal_rate, layer: refusal, labels: [refuse]}
"""


def test_run_stage_time_includes_the_coding_stage(workdir: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import biasaudit.runner.pipeline as pipeline

    real = pipeline.run_coding

    def slow_coding(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.4)  # a coding stage that takes measurable time (a judge would)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_coding", slow_coding)
    spec, ops = spec_and_operator(workdir / "coded.yaml", CODED)
    code, out, err = cli("run", f"spec={spec}", *ops, "report.formats=[json]", *isolation(workdir))
    assert len(run_dirs(workdir)) == 1, err
    [run] = run_dirs(workdir)
    assert code == verdict_code(run), err
    ex = json.loads((run / "summary.json").read_text(encoding="utf-8"))["execution"]
    assert ex["coding_s"] >= 0.4
    assert ex["run_stage_s"] >= ex["coding_s"] and ex["run_stage_s"] >= ex["seconds"]
    assert ex["run_stage_s"] == pytest.approx(ex["seconds"] + ex["coding_s"])
    m = re.search(r"; run stage (\d+\.\d+)s \(coding (\d+\.\d+)s\)$", out, re.M)
    assert m, out
    printed, coding = float(m.group(1)), float(m.group(2))
    assert printed >= coding >= 0.4 and printed == pytest.approx(ex["run_stage_s"], abs=0.01)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["run_stage_s"] >= ex["coding_s"] - 0.001 and manifest["execution"]["coding_s"] == ex["coding_s"]
