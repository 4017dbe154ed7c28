"""What the command prints when runs finish: the final line of a run (headline estimates
with their intervals, and the verdict), and the summary table of a sweep or suite."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import ValidationError

from biasaudit.records.estimate import Estimate
from biasaudit.records.jobs import JobOutcome
from biasaudit.records.summary import RunSummary
from biasaudit.verdicts.claims import claim_text


def num(x: float | None) -> str:
    """Four significant digits: enough to compare with the report, short enough for a line."""
    return "n/a" if x is None else f"{x:.4g}"


def first_sentences(text: str, limit: int) -> str:
    """`text` whole when it fits in `limit` characters; else its first sentences that fit
    (the first one whole, however long), with "[...]" for the rest: never cut inside a
    sentence, where the reason a measurement is undefined would read backwards."""
    if len(text) <= limit:
        return text
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s+[A-Z(])", text)]
    fit = [e for e in ends if e <= limit] or ends[:1]
    return text if not fit or fit[-1] >= len(text) else text[:fit[-1]] + " [...]"


def estimate_text(est: Estimate) -> str:
    """'67.5 [52.02, 79.92]': the value and its interval (95% unless the estimate says otherwise);
    'undefined (every pair ties...)' for a measurement with no information."""
    if est.value is None:
        note = est.note.removeprefix("undefined: ") if est.note else ""
        return f"undefined ({first_sentences(note, 80)})" if note and note != "no data" else "n/a (no data)"
    if est.ci_low is None or est.ci_high is None:
        return num(est.value)
    return f"{num(est.value)} [{num(est.ci_low)}, {num(est.ci_high)}]"


def headlines(summary: RunSummary, limit: int | None = None) -> str:
    heads = [(f"{mid}.{m.headline}", m.estimates[m.headline]) for mid, m in summary.metrics.items()
             if m.headline in m.estimates]
    parts = [f"{name} {estimate_text(e)}" for name, e in heads[:limit]]
    more = len(heads) - len(parts)
    return ", ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def final_line(summary: RunSummary) -> str:
    """The last line a run prints, naming each headline estimate, e.g.
    'crows-pairs-tp: INCONCLUSIVE; bias_score.score 67.5 [52.02, 79.92] (95% intervals)';
    verdicts a validity guard held back are counted: '(2 not decidable: see the report)'; a
    run that could not measure says so and why: ', could not measure: 84/84 requests failed ...'; a
    sequential run where it stopped: '; sequential: stopped at look 2 of 4, 20 of 40 stimuli run'."""
    blocked = sum(1 for v in summary.verdicts if v.blocked)
    if not summary.measured:
        held = f", could not measure: {summary.unmeasured_reason or 'too many requests failed'}"
    else:
        held = f" ({blocked} not decidable: see the report's validity section)" if blocked else ""
    q = summary.sequential
    looked = "" if q is None else (f"; sequential: stopped at look {q.stopped_at} of {len(q.planned_looks)}, "
                                   f"{q.run} of {q.planned} stimuli run")
    # which claim a PASS makes: equivalence shown (TOST) is not the same as no deviation shown
    shown = [f"{v.metric} {claim_text(v.verdict, True, v.min, v.max)}" for v in summary.verdicts
             if v.equivalence and v.verdict == "PASS"]
    held += f" ({'; '.join(shown)})" if shown else ""
    return f"{summary.audit.name}: {summary.overall}{held}; {headlines(summary)} (95% intervals){looked}"


def load_summary(run_dir: str | Path) -> RunSummary | None:
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        return None
    try:
        return RunSummary.read(path)
    except (ValueError, ValidationError):  # not a run's summary (a suite's, or damaged)
        return None


def varying_overrides(jobs: list[list[str]]) -> list[list[str]]:
    """Each job's overrides that differ between jobs (all of them when none differ)."""
    keys: dict[str, set[str]] = {}
    for ovs in jobs:
        for ov in ovs:
            k, _, v = ov.partition("=")
            keys.setdefault(k, set()).add(v)
    for ovs in jobs:
        for k in keys:
            if not any(ov.partition("=")[0] == k for ov in ovs):
                keys[k].add("")
    varying = {k for k, vals in keys.items() if len(vals) > 1}
    if not varying:
        return jobs
    return [[ov for ov in ovs if ov.partition("=")[0] in varying] for ovs in jobs]


def table(rows: list[tuple[str, str, str, str]], header: tuple[str, str, str, str]) -> list[str]:
    """Plain aligned columns (job, what varies, verdict, headline): readable in a CI log."""
    all_rows = [header, *rows]
    widths = [max(len(r[i]) for r in all_rows) for i in range(3)]
    return [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}".rstrip() for r in all_rows]


def sweep_rows(entries: list[JobOutcome]) -> list[tuple[str, str, str, str]]:
    """One row per job of a sweep, from the job ledger (see `gating.Ledger`)."""
    shown = varying_overrides([list(e.overrides) for e in entries])
    rows: list[tuple[str, str, str, str]] = []
    for e, ovs in zip(entries, shown, strict=True):
        summary = load_summary(e.run_dir) if e.run_dir else None
        if summary is None:
            verdict, head = "ERROR", (e.error or "no summary.json")
        else:
            verdict, head = summary.overall, headlines(summary, limit=1)
        rows.append((str(e.job), " ".join(ovs) or "(defaults)", verdict, head))
    return rows


def common_parent(paths: list[str]) -> Path | None:
    """The sweep folder that holds every job's run folder."""
    if not paths:
        return None
    return Path(os.path.commonpath([str(Path(p).resolve().parent) for p in paths]))


__all__ = ["estimate_text", "first_sentences", "final_line", "headlines", "load_summary", "sweep_rows", "table"]
