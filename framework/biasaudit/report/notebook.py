"""Notebook support: is this process a Jupyter kernel, and the compact HTML summaries the
API's results show as their `_repr_html_`.

Nothing here imports IPython (it is not a dependency): a kernel is recognised through the
IPython module a kernel has already loaded. Every string a summary shows that comes from
the spec, the data or the model (audit and model names, metric ids, cells, groups,
reasons) is HTML-escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from biasaudit._util.jupyter import in_notebook
from biasaudit.verdicts.claims import claim_text

if TYPE_CHECKING:
    from biasaudit.records.suite import SuiteSummary

# -- HTML summaries ---------------------------------------------------------------------

_VERDICT_COLOURS = {"PASS": "#2e7d32", "FAIL": "#c62828", "INCONCLUSIVE": "#b26a00"}


def _text(v: Any) -> str:
    return "" if v is None else escape(str(v))


def _number(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    return escape(str(v))


def interval(value: Any, low: Any, high: Any) -> str:
    """`0.52 [0.41, 0.63]`, or the value alone when there is no interval."""
    if low is None and high is None:
        return _number(value)
    return f"{_number(value)} [{_number(low)}, {_number(high)}]"


def _interval_header(levels: Iterable[float]) -> str:
    found = set(levels)
    return f"value [{found.pop() * 100:g}% interval]" if len(found) == 1 else "value [interval]"


def verdict_badge(verdict: str) -> str:
    colour = _VERDICT_COLOURS.get(verdict, "#555")
    return f'<strong style="color:{colour}">{_text(verdict)}</strong>'


def table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A small HTML table; cells are already-escaped HTML."""
    head = "".join(f'<th style="text-align:left">{escape(c)}</th>' for c in columns)
    body = "".join("<tr>" + "".join(f'<td style="text-align:left">{c}</td>' for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def run_summary_html(summary: Any, run_dir: Any) -> str:
    """A run at a glance: audit, model, overall verdict, each metric's headline estimate
    with its interval (and its per-group values), and the verdicts."""
    parts = [
        '<div class="biasaudit-run">',
        f"<p><strong>{_text(summary.audit.title or summary.audit.name)}</strong> "
        f"&middot; model <code>{_text(summary.model.name)}</code> &middot; overall "
        f"{verdict_badge(summary.overall)}</p>",
    ]
    if not summary.measured:
        parts.append(f"<p>Not measured: {_text(summary.unmeasured_reason)}</p>")
    rows, levels = [], []
    for mid, m in summary.metrics.items():
        est = m.estimates.get(m.headline)
        if est is None:
            continue
        for group, e in [("", est), *est.groups.items()]:
            rows.append([_text(mid), _text(m.headline), _text(group), interval(e.value, e.ci_low, e.ci_high),
                         _number(e.n)])
            levels.append(e.level)
    if rows:
        parts.append(table(["metric", "estimate", "group", _interval_header(levels), "n"], rows))
    if summary.verdicts:
        parts.append(table(
            ["metric", "over", "cell", "bounds", _interval_header(v.estimate.level for v in summary.verdicts),
             "verdict", "reason"],
            [[_text(v.metric), _text(v.over), _text(v.cell),
              f"{'equivalence ' if v.equivalence else ''}[{_number(v.min)}, {_number(v.max)}]",
              interval(v.estimate.value, v.estimate.ci_low, v.estimate.ci_high), verdict_badge(v.verdict),
              _text(f"{claim_text(v.verdict, v.equivalence, v.min, v.max)}: {v.reason}")]
             for v in summary.verdicts]))
    parts.append(f"<p><small>run folder <code>{_text(run_dir)}</code></small></p></div>")
    return "".join(parts)


def suite_summary_html(summary: SuiteSummary, out_dir: Any) -> str:
    """A suite at a glance: its overall verdict and one row per run (member x subject)
    with the run's headline estimate and verdict."""
    body = []
    for r in summary.rows:
        est = r.estimate
        body.append([_text(r.member), _text(r.subject), _text(r.model), _text(r.estimate_name),
                     interval(est.value, est.ci_low, est.ci_high), verdict_badge(r.overall)])
    name = summary.suite.title or summary.suite.name
    return ('<div class="biasaudit-suite">'
            f"<p><strong>suite {_text(name)}</strong> &middot; overall {verdict_badge(summary.overall)}"
            f" &middot; {len(summary.rows)} runs</p>"
            + table(["member", "subject", "model", "estimate", "value [interval]", "overall"], body)
            + f"<p><small>suite folder <code>{_text(out_dir)}</code></small></p></div>")


__all__ = ["in_notebook", "interval", "run_summary_html", "suite_summary_html", "table", "verdict_badge"]
