"""Audit suites: several method specs run against the same model(s), one combined
report with a verdict per method and the rank agreement between methods across
subjects (triangulation: TP vs NLI, single-token vs long-form, selection vs elaboration).

A suite is a spec file with a top-level `suite:` key. Members are ordinary specs, run by
the ordinary pipeline (cached, resumable), each into its own run folder.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from biasaudit.errors import BiasAuditError, SpecError
from biasaudit.records.estimate import Estimate
from biasaudit.records.suite import (
    SanityCheck,
    SeparatedCount,
    SuiteInfo,
    SuiteMemberInfo,
    SuiteRow,
    SuiteSummary,
    SuiteTotals,
    SuiteVerdict,
    TauPair,
    Triangulation,
)
from biasaudit.records.summary import RunSummary
from biasaudit.report.sections import SANITY_TEXT, signoff
from biasaudit.spec.suite import (
    SuiteMember,
    SuiteSpec,
    load_suite,
    member_spec_ref,
    spec_override,
)


@dataclass
class Job:
    member: SuiteMember
    member_id: str
    subject: str
    overrides: list[str]










def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_") or "default"


def _key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def _subject_combos(suite: SuiteSpec, overrides: list[str], multirun: bool) -> tuple[list[list[str]], bool]:
    """The override combinations, one per subject, and whether the user named the model."""
    from biasaudit.runner.sweeps import sweep_combinations

    user = [ov for ov in overrides if spec_override([ov]) is None]
    combos = sweep_combinations(user) if multirun else [user]
    has_model = any(_key(ov) == "model" for ov in user)
    if not has_model and suite.subjects:
        combos = [[*c, f"model={s}"] for c in combos for s in suite.subjects]
    return combos, has_model


def _subject_label(combo: list[str], varying: list[int]) -> str:
    label_parts = [combo[i] for i in varying if i < len(combo)]
    # one varying setting: its value names the subject; several: key=value pairs
    subject = (label_parts[0].split("=", 1)[1] if len(label_parts) == 1
               else ",".join(p.split("=", 1)[1] if p.startswith("model=") else p for p in label_parts))
    if not subject:
        subject = next((p.split("=", 1)[1] for p in combo if p.startswith("model=")), "default")
    return subject


def _member_jobs(suite: SuiteSpec, suite_file: Path, combo: list[str], subject: str, has_model: bool) -> list[Job]:
    jobs = []
    for m in suite.members:
        mid = m.label or Path(m.spec).stem
        model = next((p.split("=", 1)[1] for p in combo if p.startswith("model=")), None)
        if m.subjects is not None and not has_model and model not in m.subjects:
            continue  # the suite's own subjects: this member runs on some of them
        given = {_key(ov) for ov in combo}
        own = [ov for ov in m.overrides if _key(ov) not in given]  # the command line wins
        jobs.append(Job(member=m, member_id=mid, subject=subject,
                        overrides=[f"spec={member_spec_ref(m, suite_file)}", *own, *combo]))
    return jobs


def plan_jobs(suite: SuiteSpec, suite_file: Path, overrides: list[str], multirun: bool) -> list[Job]:
    """One job per member x subject. Subjects are the sweep combinations of the user's
    overrides (with -m), or the suite's `subjects`, or the default model."""
    combos, has_model = _subject_combos(suite, overrides, multirun)
    varying = [i for i in range(max((len(c) for c in combos), default=0))
               if len({c[i] if i < len(c) else "" for c in combos}) > 1]
    jobs = []
    for combo in combos:
        jobs.extend(_member_jobs(suite, suite_file, combo, _subject_label(combo, varying), has_model))
    return jobs


def headline_of(summary: RunSummary, member: SuiteMember) -> tuple[str, Estimate, float | None]:
    """(label, estimate, reference) of the value used to rank subjects."""
    metrics = summary.metrics
    if member.metric:
        mid, _, name = member.metric.partition(".")
        if mid not in metrics:
            raise SpecError(f"suite member {member.spec!r} has no metric {mid!r}", key="suite.members.metric",
                            hint=f"metrics: {', '.join(metrics)}")
    else:
        mid, name = next(iter(metrics)), ""
    m = metrics[mid]
    name = name or m.headline
    if name not in m.estimates:
        raise SpecError(f"metric {mid!r} has no estimate {name!r}", key="suite.members.metric",
                        hint=f"estimates: {', '.join(m.estimates)}")
    return f"{mid}.{name}", m.estimates[name], m.reference


def magnitude(value: float | None, reference: float | None) -> float | None:
    """How biased: distance from the metric's no-bias reference, or the value itself."""
    if value is None:
        return None
    return abs(value - reference) if reference is not None else value


def triangulate(members: list[str], subjects: list[str], mags: dict[str, dict[str, float | None]],
                intervals: dict[str, dict[str, tuple[float | None, float | None]]] | None = None) -> Triangulation:
    """Kendall tau-b between every two members' rankings of the subjects (scipy)."""
    from scipy.stats import kendalltau

    matrix: list[list[float | None]] = []
    pairs: list[TauPair] = []
    for a in members:
        row: list[float | None] = []
        for b in members:
            common = [s for s in subjects if mags[a].get(s) is not None and mags[b].get(s) is not None]
            tau = p = None
            if len(common) >= 3:
                x = np.array([mags[a][s] for s in common], dtype=float)
                y = np.array([mags[b][s] for s in common], dtype=float)
                if np.ptp(x) > 0 and np.ptp(y) > 0:
                    r = kendalltau(x, y, variant="b")
                    tau, p = float(r.statistic), float(r.pvalue)
            row.append(tau)
            if a < b:
                pairs.append(TauPair(a=a, b=b, tau_b=tau, p_value=p, n=len(common)))
        matrix.append(row)
    rankings = {m: sorted([s for s in subjects if mags[m].get(s) is not None], key=lambda s: -mags[m][s])  # type: ignore[operator]
                for m in members}
    ranking_text = {m: _ranking_text(rk, mags[m]) for m, rk in rankings.items()}
    separated = {m: _separated_pairs(rankings[m], (intervals or {}).get(m, {})) for m in members}
    note = ("Subjects are ranked by each method's bias magnitude (distance from the no-bias reference, or the rate "
            "itself). Kendall tau-b near 1: the methods order the models alike; near 0 or negative: they disagree, "
            "and a single method's verdict should not be trusted alone. A ranking is only as firm as the intervals "
            "behind it: where no two subjects' 95% intervals are separated, that method's order is within noise and "
            "its tau says little.")
    if len(subjects) < 3:
        note = (f"Rank agreement needs at least 3 subjects; this suite ran {len(subjects)}. Run it over more models "
                "(e.g. `biasaudit run -m spec=<suite> model=a,b,c`). " + note)
    return Triangulation(labels=members, matrix=matrix, pairs=pairs, rankings=rankings, ranking_text=ranking_text,
                         separated=separated, note=note, n_subjects=len(subjects))


def _ranking_text(ranked: list[str], mag: dict[str, float | None]) -> str:
    """'a > b = c': equal magnitudes are ties, not an order the sort happened to pick."""
    if not ranked:
        return ""
    out = ranked[0]
    for prev, cur in zip(ranked, ranked[1:], strict=False):
        tie = math.isclose(mag[prev], mag[cur], rel_tol=1e-12, abs_tol=1e-12)  # type: ignore[arg-type]
        out += (" = " if tie else " > ") + cur
    return out


def _separated_pairs(subjects: list[str], ci: dict[str, tuple[float | None, float | None]]) -> SeparatedCount:
    """How many pairs of subjects have non-overlapping 95% intervals on the headline estimate."""
    known = [s for s in subjects if s in ci and None not in ci[s]]
    total = len(known) * (len(known) - 1) // 2
    sep = 0
    for i, a in enumerate(known):
        for b in known[i + 1:]:
            (la, ha), (lb, hb) = ci[a], ci[b]
            sep += int(ha < lb or hb < la)  # type: ignore[operator]
    return SeparatedCount(separated=sep, pairs=total)


def _shown_path(p: Path) -> str:
    """Relative to the working directory when inside it: the report is not tied to one checkout."""
    try:
        return str(Path(p).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def _suite_row(job: Job, run_dir: Path, s: RunSummary, out_dir: Path) -> SuiteRow:
    """One member run's line of the suite: its headline, verdicts and counts."""
    label, est, ref = headline_of(s, job.member)
    return SuiteRow(
        member=job.member_id, subject=job.subject, audit=s.audit.name, method=s.audit.method,
        model=s.model.name, overall=s.overall, measured=s.measured,
        unmeasured_reason=s.unmeasured_reason, estimate_name=label, estimate=est,
        reference=ref, magnitude=magnitude(est.value, ref),
        verdicts=[SuiteVerdict(metric=v.metric, over=v.over, verdict=v.verdict, estimate=v.estimate)
                  for v in s.verdicts],
        report=str(Path(run_dir).relative_to(out_dir) / "report.html"),
        requests=s.execution.requests, calls=s.execution.calls,
        failures=s.execution.failures,
    )


def _suite_overall(verdicts: list[str]) -> str:
    """FAIL if any run failed, else INCONCLUSIVE if any could not decide, else PASS (sanity
    members are left out by the caller: they are about the model's fitness for a method,
    stated on their own)."""
    overall = "PASS"
    for v in verdicts:
        if v == "FAIL":
            overall = "FAIL"
        elif v in ("INCONCLUSIVE", "NO THRESHOLDS") and overall == "PASS":
            overall = "INCONCLUSIVE"
    return overall


def build_suite_summary(suite: SuiteSpec, suite_file: Path, command: list[str],
                        results: list[tuple[Job, Path, RunSummary]], out_dir: Path) -> SuiteSummary:
    members = list(dict.fromkeys(j.member_id for j, _, _ in results))
    subjects = list(dict.fromkeys(j.subject for j, _, _ in results))
    rows: list[SuiteRow] = []
    mags: dict[str, dict[str, float | None]] = {m: {} for m in members}
    cis: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    method_of: dict[str, str] = {}
    for job, run_dir, s in results:
        row = _suite_row(job, run_dir, s, out_dir)
        mags[job.member_id][job.subject] = row.magnitude
        cis.setdefault(job.member_id, {})[job.subject] = (row.estimate.ci_low, row.estimate.ci_high)
        method_of[job.member_id] = s.audit.method
        rows.append(row)
    verdict_matrix = {m: {r.subject: r.overall for r in rows if r.member == m} for m in members}
    sanity_ids = {j.member_id for j, _, _ in results if j.member.sanity}
    sanity = [SanityCheck(member=r.member, subject=r.subject, model=r.model, verdict=r.overall,
                          text=SANITY_TEXT.get(r.overall, "")) for r in rows if r.member in sanity_ids]
    overall = _suite_overall([r.overall for r in rows if r.member not in sanity_ids])
    return SuiteSummary(
        suite=SuiteInfo(name=suite.name, title=suite.title or suite.name, description=suite.description,
                        file=_shown_path(suite_file), **signoff(suite)),
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        command=shlex.join(command),
        members=[SuiteMemberInfo(id=m, method=method_of.get(m, "")) for m in members],
        subjects=subjects,
        rows=rows,
        verdict_matrix=verdict_matrix,
        overall=overall,
        sanity=sanity,
        notices=list(dict.fromkeys(n for _, _, s in results for n in s.cover.notices)),
        triangulation=triangulate([m for m in members if m not in sanity_ids], subjects, mags, cis),
        totals=SuiteTotals(members=len(members), subjects=len(subjects), runs=len(rows),
                           requests=sum(r.requests for r in rows), calls=sum(r.calls for r in rows),
                           failures=sum(r.failures for r in rows), unmeasured=sum(not r.measured for r in rows)),
    )


def run_suite(suite: SuiteSpec, suite_file: Path, overrides: list[str], multirun: bool,
              command: list[str]) -> tuple[SuiteSummary, Path]:
    """Validate every member x subject first (nothing runs on bad input), then run them."""
    from biasaudit.report.render import render_suite
    from biasaudit.runner.jobs import run_job
    from biasaudit.runner.pipeline import _write, prepare
    from biasaudit.spec.compose import compose

    jobs = plan_jobs(suite, suite_file, overrides, multirun)
    prepared = []
    for job in jobs:
        try:
            prepared.append((job, prepare(compose(job.overrides))))
        except BiasAuditError as exc:
            for e in [exc, *getattr(exc, "errors", [])]:
                e.message = f"suite member {job.member_id!r} ({job.subject}): {e.message}"
            raise
    from biasaudit.runner.preflight import check_outputs

    outputs = {(p.composed.config.runtime.cache, p.composed.config.runtime.reports_dir) for _, p in prepared}
    for cache, reports in sorted(outputs):  # every cache and reports folder, before any run writes
        check_outputs(cache, reports)
    reports_dir = Path(prepared[0][1].composed.config.runtime.reports_dir)
    out_dir = reports_dir / suite.name / datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    results = []
    for i, (job, prep) in enumerate(prepared, 1):
        run_dir = out_dir / _slug(f"{job.member_id}--{job.subject}")
        print(f"[{i}/{len(prepared)}] {job.member_id} on {job.subject}", flush=True)
        member_cmd = ["biasaudit", "run", *job.overrides]
        summary = run_job(prep.composed, run_dir, member_cmd, prep)  # the one route every run takes
        ex = summary.execution
        print(f"    overall {summary.overall}; {ex.requests} requests, {ex.cache_hits} from cache, "
              f"{ex.calls} model calls, {ex.coding_calls} coding calls, {ex.failures} failed", flush=True)
        if not summary.measured:
            print(f"    could not measure: {summary.unmeasured_reason}", flush=True)
        results.append((job, run_dir, summary))
    s = build_suite_summary(suite, suite_file, command, results, out_dir)
    render_suite(out_dir, s, write=_write)
    return s, out_dir


__all__ = ["SuiteSpec", "load_suite", "plan_jobs", "run_suite", "triangulate"]
