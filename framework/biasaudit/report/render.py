"""Render report.html, report.md and summary.json from the typed run summary.

The report's views are built here, at render time (`sections.document`); the HTML and
Markdown are drawn only from that document, which is what summary.json holds, so
summary.json holds every number they show. Model text is escaped by Jinja's autoescape.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from biasaudit.records.compare import CompareResult
from biasaudit.records.suite import SuiteSummary
from biasaudit.records.summary import RunSummary
from biasaudit.report.csv_export import write_compare_csvs, write_csvs
from biasaudit.report.outcome import first_sentences
from biasaudit.report.plots import render_plot
from biasaudit.report.sections import document
from biasaudit.spec.models import ReportSpec
from biasaudit.verdicts.claims import claim_text


def fixed(x: float, digits: int) -> str:
    """Fixed-point with `digits` decimals, widened for small non-zero values so they keep
    two significant figures instead of printing as 0.000 (an estimate of 8e-05 is not 0).
    Below 1e-8 the value is numerical noise at this precision and prints as zero."""
    a = abs(x)
    if 1e-8 <= a < 10 ** -digits:
        digits = min(10, -math.floor(math.log10(a)) + 1)
    return f"{x:.{digits}f}"


def fmt_num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        return fixed(x, digits)
    return str(x)


def fmt_est(e: dict[str, Any] | None, digits: int = 2) -> str:
    if not e or e.get("value") is None:
        note = str((e or {}).get("note") or "")
        # an undefined measurement says why (every pair ties, no answer names a person...),
        # in whole sentences
        return f"undefined ({first_sentences(note.removeprefix('undefined: '), 240)})" if note and note != "no data" \
            else "n/a (no data)"
    if e.get("ci_low") is None:
        return f"{fixed(e['value'], digits)} (n={e['n']})"
    return f"{fixed(e['value'], digits)} [{fixed(e['ci_low'], digits)}, {fixed(e['ci_high'], digits)}] (n={e['n']})"


def html_est(e: dict[str, Any] | None, digits: int = 2) -> Markup:
    """`fmt_est` for HTML: an undefined estimate's reason in a span that wraps (a number
    cell does not), so a long reason stays on the page instead of running off it."""
    text = fmt_est(e, digits)
    if e and e.get("value") is not None:
        return Markup("{}").format(text)
    return Markup('<span class="why">{}</span>').format(text)


def md_cell(x: Any) -> str:
    return fmt_num(x).replace("|", "\\|").replace("\n", " ")


_MD_SPECIAL = re.compile(r"[&<>\[\]]|(?<!\\)\|")
_MD_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "[": "\\[", "]": "\\]", "|": "\\|"}


def md_text(x: Any) -> str:
    """Every value the Markdown report prints (its `finalize`), as literal text: raw HTML
    from stimuli, model output or titles becomes entities, brackets cannot open a link or
    an image, and a `|` cannot split a table cell. The HTML report gets the same from
    Jinja's autoescape."""
    return _MD_SPECIAL.sub(lambda m: _MD_ESCAPES[m.group()], x if isinstance(x, str) else str(x))


_MD_BLOCK_MARK = re.compile(r"^([#>+*=~`-])")
_MD_ORDERED = re.compile(r"^(\d+)([.)])")


def md_lines(x: Any) -> list[str]:
    """Free text of several lines (audit.scope, audit.limitations) as Markdown lines that
    open no heading, list, quote or code block: leading spaces go and a leading marker is
    backslash-escaped. Each line then goes through `md_text` like every printed value."""
    text = x if isinstance(x, str) else str(x)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            out.append(_MD_ORDERED.sub(r"\1\\\2", _MD_BLOCK_MARK.sub(r"\\\1", line)))
    return out


def _env(autoescape: bool) -> Environment:
    env = Environment(
        loader=PackageLoader("biasaudit.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]) if autoescape else False,
        finalize=None if autoescape else md_text,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=fmt_num, est=html_est if autoescape else fmt_est, md=md_cell, md_lines=md_lines,
                       claim=verdict_claim, kinds=verdict_kinds, shown=shown_estimates)
    return env


_CONTRAST_TITLES = ("Pairwise differences of ", "Largest minus smallest ")


def shown_estimates(m: dict[str, Any]) -> dict[str, Any]:
    """A metric's estimates as its results table lists them, and a note: the pairwise
    contrasts (`contrast.*`) are listed once, in the metric's own contrast table (with
    each group's n, the test and Holm's p), not a second time among the estimates. A
    metric without a contrast table keeps them here. Every estimate stays in
    summary.json."""
    tables = [t["title"] for t in m.get("tables", []) if str(t["title"]).startswith(_CONTRAST_TITLES)]
    ests: dict[str, Any] = m["estimates"]
    if not tables:
        return {"rows": ests, "note": ""}
    rows = {k: e for k, e in ests.items() if not k.startswith("contrast.") or k == m.get("headline")}
    # no count in the note: every number the report shows is one summary.json holds
    note = ("The pairwise contrast estimates (contrast.*) are listed once, in "
            f"{' and '.join(repr(t) for t in tables)} below.") if len(rows) < len(ests) else ""
    return {"rows": rows, "note": note}


def verdict_claim(v: dict[str, Any]) -> str:
    """The claim a verdict row makes (verdicts/claims.py): equivalence shown, or no
    deviation shown beyond a bound, ..."""
    return claim_text(str(v["verdict"]), bool(v.get("equivalence")), v.get("min"), v.get("max"))


def verdict_kinds(verdicts: list[dict[str, Any]]) -> set[str]:
    """The kinds of threshold among the verdicts: 'bound', 'equivalence'."""
    return {"equivalence" if v.get("equivalence") else "bound" for v in verdicts}


def render_all(
    run_dir: Path, run: RunSummary, report: ReportSpec,
    *, write: Callable[[Path, str], None], item_texts: dict[str, list[dict[str, str]]] | None = None,
) -> None:
    """Every output of one run from its summary, in the formats `report` asks for (the
    JSON summary always). `item_texts`: metric id -> one {prompt, answer} per item,
    items.csv's text columns."""
    formats = set(report.formats) | {"json"}
    # the report's views are built now, from the typed summary; the templates read the
    # document summary.json holds (its records and these views)
    summary: dict[str, Any] = document(run, report.crosswalk)
    write(run_dir / "summary.json", json.dumps(summary, indent=2, allow_nan=False, default=str))
    write_csvs(run_dir, run.metrics, write, item_texts)
    plot_files: dict[str, list[dict[str, str]]] = {}
    if formats & {"html", "pdf"}:
        plots = {mid: [render_plot(p) for p in m["plots"]] for mid, m in summary["metrics"].items()}
        condition_plots = [render_plot(c["plot"]) for c in summary.get("conditions", {}).get("spreads", [])
                           if c.get("plot")]
        html = _env(True).get_template("report.html.j2").render(s=summary, plots=plots,
                                                                condition_plots=condition_plots,
                                                                paper=_PAPER[report.paper])
        write(run_dir / "report.html", html)
        if "md" in formats:
            # Markdown cannot inline SVG: the same drawings as files beside it (only when
            # the HTML drew them; an md-only run skips matplotlib altogether).
            plot_files = _write_plot_files(run_dir, summary, plots, write)
    if "md" in formats:
        md = _env(False).get_template("report.md.j2").render(s=summary, plot_files=plot_files)
        write(run_dir / "report.md", md)
    if "pdf" in formats:
        from biasaudit.report.pdf import html_to_pdf

        html_to_pdf(run_dir / "report.html", run_dir / "report.pdf")


# CSS `@page { size }` of report.paper: Chromium prints the page size the CSS asks for.
_PAPER = {"a4": "A4", "letter": "letter"}


def _write_plot_files(run_dir: Path, summary: dict[str, Any], plots: dict[str, list[str]],
                      write: Callable[[Path, str], None]) -> dict[str, list[dict[str, str]]]:
    (run_dir / "plots").mkdir(exist_ok=True)
    files: dict[str, list[dict[str, str]]] = {}
    for mid, svgs in plots.items():
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", mid)
        for i, (svg, spec) in enumerate(zip(svgs, summary["metrics"][mid]["plots"], strict=True), 1):
            name = f"plots/{slug}-{i}.svg"
            write(run_dir / name, svg)
            alt = re.sub(r"[\[\]\n]", " ", spec.get("alt") or spec.get("title") or "plot")
            files.setdefault(mid, []).append({"file": name, "alt": alt})
    return files


def render_compare(out_dir: Path, comparison: CompareResult, *, write: Callable[[Path, str], None]) -> None:
    from datetime import UTC, datetime

    out_dir.mkdir(parents=True, exist_ok=True)
    data = comparison.model_dump(mode="json")  # what compare.json holds; the template and the CSVs read it
    write(out_dir / "compare.json", json.dumps(data, indent=2, allow_nan=False, default=str))
    write_compare_csvs(out_dir, data, write)
    plots = {name: [render_plot(p) for p in a["plots"]] for name, a in data["analyses"].items()}
    html = _env(True).get_template("compare.html.j2").render(
        c=data, plots=plots, generated=datetime.now(UTC).isoformat(timespec="seconds"))
    write(out_dir / "compare.html", html)


def render_suite(out_dir: Path, summary: SuiteSummary, *, write: Callable[[Path, str], None]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write(out_dir / "summary.json", summary.to_json())
    t = summary.triangulation
    heat = None
    if t.n_subjects >= 3 and len(t.labels) >= 2:
        heat = {"svg": render_plot({
            "kind": "heatmap", "title": "Rank agreement between methods (Kendall tau-b)", "labels": t.labels,
            "matrix": t.matrix, "ylabel": "tau-b", "vmin": -1.0, "vmax": 1.0,
            "alt": "Matrix of Kendall tau-b between the methods' rankings of the models; blue agrees, red disagrees."}),
            "alt": "Kendall tau-b between every two methods' rankings of the subjects."}
    bars = []
    for m in summary.members:
        rows = [r for r in summary.rows if r.member == m.id]
        ref = rows[0].reference if rows else None
        bars.append({"svg": render_plot({
            "kind": "interval_bars", "title": f"{m.id}: {rows[0].estimate_name if rows else ''} by subject",
            "xlabel": "subject", "ylabel": rows[0].estimate_name if rows else "", "labels": [r.subject for r in rows],
            "estimates": [r.estimate.model_dump(mode="json") for r in rows], "reference": ref,
            "alt": f"Headline estimate of {m.id} for each subject with its 95% interval."}),
            "alt": f"Headline estimate of {m.id} for each subject with its 95% interval."})
    # the template reads the summary as summary.json holds it
    html = _env(True).get_template("suite.html.j2").render(s=summary.model_dump(mode="json"), heat=heat, bars=bars)
    write(out_dir / "report.html", html)
