"""`--junit PATH`: the verdicts as JUnit XML, which CI systems (GitHub Actions reporters,
GitLab, Jenkins, Azure) show as test results.

One <testsuite> per run (per job of a sweep, per member x subject of a suite), one
<testcase> per threshold. FAIL is a <failure>; INCONCLUSIVE is a <failure> under the
default `--fail-on inconclusive` and <skipped> otherwise; a job stopped by a user error is
an <error>, and so is a command stopped by one before any job ran (one test case whose
message is the error line). A run that could not measure (more than
`validity.max_failed_share` of its requests failed) is an <error> on each of its
thresholds (on one `run` test case when it has none), whatever `--fail-on` says: the
audit did not happen, which is not a finding about the model. The path is checked before
the run and written by the output-path rule of `fileio` (a symlink written through, /dev/stdout or /dev/null as a
stream, a directory, FIFO or other device refused). Every test case carries the estimate and its interval in its message (and in
<system-out> for PASS). The shape is the common JUnit one (testsuites / testsuite /
testcase / failure | error | skipped), with the count attributes filled in.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .fileio import check_output_file, write_output_file
from .gating import DEFAULT_FAIL_ON
from .outcome import estimate_text, num
from .summary import RunSummary, VerdictRow

# XML 1.0 cannot carry most control characters, even escaped; spec text could hold them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: Any) -> str:
    from .secrets import redact

    return _NOT_XML.sub("?", redact(str(text)))  # an error line may quote a server's answer


@dataclass
class SuiteRun:
    """One run as a JUnit test suite: its summary.json, or the error that stopped it."""
    name: str
    summary: RunSummary | None = None
    error: str | None = None


def bounds_text(v: VerdictRow) -> str:
    lo, hi = v.min, v.max
    if lo is not None and hi is not None:
        return f"within [{num(lo)}, {num(hi)}]"
    if lo is not None:
        return f">= {num(lo)}"
    return f"<= {num(hi)}"


def case_name(v: VerdictRow) -> str:
    where = v.over + (f" {v.cell}" if v.cell else "")
    return f"{v.metric} ({where}) {bounds_text(v)}"


def case_message(v: VerdictRow) -> str:
    e = v.estimate
    how = f"{e.method}, n={e.n}".strip(", ")
    return (f"{v.verdict}: {v.metric} = {estimate_text(e)} (95% interval; {how}); "
            f"allowed {bounds_text(v)}: {v.reason}")


def _suite(run: SuiteRun, fail_on: str) -> ET.Element:
    ts = ET.Element("testsuite", name=_clean(run.name))
    tests = failures = errors = skipped = 0
    seconds = 0.0
    if run.summary is None:
        tc = ET.SubElement(ts, "testcase", classname=_clean(run.name), name="run", time="0")
        ET.SubElement(tc, "error", type="user_error", message=_clean(run.error or "the run did not finish"))
        tests, errors = 1, 1
    else:
        s = run.summary
        seconds = float(s.execution.seconds or 0.0)
        props = ET.SubElement(ts, "properties")
        for k, val in (("audit", s.audit.name), ("model", s.model.name), ("run_id", s.run_id), ("overall", s.overall),
                       ("measured", str(s.measured).lower())):
            ET.SubElement(props, "property", name=k, value=_clean(val))
        unmeasured = None if s.measured else _clean(f"could not measure: {s.unmeasured_reason or 'too many requests failed'}")
        if unmeasured and not s.verdicts:
            tc = ET.SubElement(ts, "testcase", classname=_clean(s.audit.name), name="run", time="0")
            ET.SubElement(tc, "error", type="UNMEASURED", message=unmeasured).text = unmeasured
            tests += 1
            errors += 1
        for v in s.verdicts:
            tests += 1
            tc = ET.SubElement(ts, "testcase", classname=_clean(s.audit.name), name=_clean(case_name(v)), time="0")
            msg = _clean(case_message(v))
            if unmeasured:
                ET.SubElement(tc, "error", type="UNMEASURED", message=unmeasured).text = msg
                errors += 1
            elif v.verdict == "FAIL":
                ET.SubElement(tc, "failure", type="FAIL", message=msg).text = msg
                failures += 1
            elif v.verdict == "INCONCLUSIVE" and fail_on == "inconclusive":
                ET.SubElement(tc, "failure", type="INCONCLUSIVE", message=msg).text = msg
                failures += 1
            elif v.verdict == "INCONCLUSIVE":
                ET.SubElement(tc, "skipped", message=msg)
                skipped += 1
            else:
                ET.SubElement(tc, "system-out").text = msg
    ts.set("tests", str(tests))
    ts.set("failures", str(failures))
    ts.set("errors", str(errors))
    ts.set("skipped", str(skipped))
    ts.set("time", f"{seconds:.3f}")
    ts.set("timestamp", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return ts


def junit_xml(runs: list[SuiteRun], fail_on: str = DEFAULT_FAIL_ON, name: str = "biasaudit") -> str:
    root = ET.Element("testsuites", name=_clean(name))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    for run in runs:
        ts = _suite(run, fail_on)
        root.append(ts)
        for k in totals:
            totals[k] += int(ts.get(k, "0"))
        seconds += float(ts.get("time", "0"))
    for k, n in totals.items():
        root.set(k, str(n))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


KEY = "--junit"
WHAT = "JUnit file"


def check_junit_path(path: str | Path) -> None:
    """`--junit PATH` checked before the run starts (`fileio.check_output_file`): a
    symlink is written through, /dev/stdout, /dev/null or a terminal as a stream; a
    directory, FIFO, socket, other device or read-only place is a one-line error."""
    check_output_file(path, key=KEY, what=WHAT)


def write_junit(path: Path, runs: list[SuiteRun], fail_on: str = DEFAULT_FAIL_ON, name: str = "biasaudit") -> None:
    write_output_file(path, junit_xml(runs, fail_on, name), key=KEY, what=WHAT)


def write_junit_error(path: str | Path, message: str, name: str = "biasaudit run") -> None:
    """A run stopped by a user error before any job ran: one errored test case whose
    message is the one-line error, so CI shows why."""
    write_junit(Path(path), [SuiteRun(name=name, error=message)])


__all__ = ["SuiteRun", "check_junit_path", "junit_xml", "write_junit", "write_junit_error"]
