"""What `biasaudit run` does once its jobs are done: the sweep or suite summary table and
the `compare` command to run next, the JUnit file, and the exit code (worst job wins)."""

from __future__ import annotations

import shlex
from pathlib import Path

from biasaudit.records.jobs import JobOutcome
from biasaudit.records.suite import SuiteSummary
from biasaudit.report.junit import SuiteRun, base_names, job_labels, unique_names, write_junit
from biasaudit.report.outcome import common_parent, headlines, load_summary, sweep_rows, table
from biasaudit.verdicts.gating import EXIT_USER_ERROR, verdict_exit, worst


def end_jobs(entries: list[JobOutcome], *, multirun: bool, fail_on: str, junit: str | None) -> int:
    """A single run or a Hydra sweep: one ledger entry per job."""
    codes = [EXIT_USER_ERROR if e.error else verdict_exit(e.overall or "", fail_on, e.measured) for e in entries]
    if multirun and entries:
        print()
        for line in table(sweep_rows(entries), ("job", "overrides", "verdict", "headline estimate [95% CI]")):
            print(line)
        for e in entries:
            if not e.error and not e.measured:
                print(f"job {e.job} could not measure: {e.unmeasured_reason or 'too many requests failed'}")
        where = common_parent([e.run_dir for e in entries if e.run_dir])
        if where is not None:
            print(f"next: biasaudit compare {shlex.quote(str(where))}")
    if junit:
        # names that stay the same on every run and machine: no run folder, id or time
        labels = job_labels([list(e.overrides) for e in entries])
        summaries = [load_summary(e.run_dir) if e.run_dir else None for e in entries]
        names = unique_names([f"{s.audit.name}: {label}" if s else label for s, label in zip(summaries, labels, strict=True)],
                             [f"job {e.job}" for e in entries])
        runs = [SuiteRun(name=n, summary=s, error=e.error) for n, s, e in zip(names, summaries, entries, strict=True)]
        write_junit(Path(junit), runs, fail_on)
        print(f"junit: {junit}")
    return worst(codes)


def end_suite(summary: SuiteSummary, out_dir: Path, *, fail_on: str, junit: str | None) -> int:
    """A suite: one row per member x subject run."""
    rows, runs, codes, unmeasured = [], [], [], []
    # sanity members check the subject, not its bias: like the suite's overall verdict,
    # the exit code leaves them out (JUnit still lists them)
    sanity = {c.member for c in summary.sanity}
    for r in summary.rows:
        member = load_summary(out_dir / Path(r.report).parent)
        measured = r.measured
        if r.member not in sanity:
            codes.append(verdict_exit(r.overall, fail_on, measured))
        if not measured:
            unmeasured.append(f"{r.member} on {r.subject} could not measure: "
                              f"{r.unmeasured_reason or 'too many requests failed'}")
        rows.append((r.member, r.subject, r.overall, headlines(member, limit=1) if member else "n/a"))
        runs.append(SuiteRun(name=f"{r.member} on {base_names(r.subject)}", summary=member,
                             error=None if member else "no summary.json"))
    print()
    for line in table(rows, ("member", "subject", "verdict", "headline estimate [95% CI]")):
        print(line)
    for line in unmeasured:
        print(line)
    print(f"next: biasaudit compare {shlex.quote(str(out_dir))}")
    if junit:
        write_junit(Path(junit), runs, fail_on, name=summary.suite.name)
        print(f"junit: {junit}")
    return worst(codes)


__all__ = ["end_jobs", "end_suite"]
