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
the run and written by the output-path rule of `fileio` (a symlink refused, never followed, /dev/stdout or /dev/null as a
stream, a directory, FIFO or other device refused). Every test case carries the estimate and its interval in its message (and in
<system-out> for PASS). The shape is the common JUnit one (testsuites / testsuite /
testcase / failure | error | skipped), with the count attributes filled in, valid
against the Jenkins xUnit plugin's `junit-10.xsd` (the schema CI readers follow; it has
no `skipped` on `<testsuites>`, so the skipped count is on each `<testsuite>` only).

Names are stable across runs and machines, so CI tracks a threshold's history: a
`<testsuite>` and the `classname` of its test cases are the audit's name and the job's
overrides (`job_labels`: a spec file by its stem, any other absolute path by its base
name, output places and Hydra's own settings left out), or a suite's member and subject;
a `<testcase>` is the metric, its group or cell and the threshold's bounds. Run ids, the
run folder and the time go in `<properties>` and attributes, never in a name.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from biasaudit._util.fileio import check_output_file, write_output_file
from biasaudit.records.summary import RunSummary
from biasaudit.records.verdict import VerdictRecord
from biasaudit.report.outcome import estimate_text, num
from biasaudit.verdicts.claims import claim_text
from biasaudit.verdicts.gating import DEFAULT_FAIL_ON

# XML 1.0 cannot carry most control characters, even escaped; spec text could hold them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: Any) -> str:
    from biasaudit._util.secrets import redact

    return _NOT_XML.sub("?", redact(str(text)))  # an error line may quote a server's answer


@dataclass
class SuiteRun:
    """One run as a JUnit test suite: its summary.json, or the error that stopped it."""
    name: str
    summary: RunSummary | None = None
    error: str | None = None


def bounds_text(v: VerdictRecord) -> str:
    lo, hi = v.min, v.max
    if v.equivalence:
        return f"equivalence band [{num(lo)}, {num(hi)}]"
    if lo is not None and hi is not None:
        return f"within [{num(lo)}, {num(hi)}]"
    if lo is not None:
        return f">= {num(lo)}"
    return f"<= {num(hi)}"


def case_name(v: VerdictRecord) -> str:
    where = v.over + (f" {v.cell}" if v.cell else "")
    return f"{v.metric} ({where}) {bounds_text(v)}"


def case_message(v: VerdictRecord) -> str:
    e = v.estimate
    how = f"{e.method}, n={e.n}".strip(", ")
    claim = claim_text(v.verdict, v.equivalence, v.min, v.max)
    return (f"{v.verdict}: {v.metric} = {estimate_text(e)} (95% interval; {how}); "
            f"allowed {bounds_text(v)}: {v.reason}; claim: {claim}")


# -- stable names ---------------------------------------------------------------------------
# Overrides that say where a run's files go, how it shows progress, or that the CLI adds
# itself (--retry-failed, a sweep's per-job caches): not what the run measures, and most
# hold a path of this machine. Hydra's own settings (`hydra.*`, `hydra/launcher=...`) too.
_PLACE_KEYS = frozenset({"runtime.cache", "runtime.reports_dir", "runtime.models_dir", "runtime.job_cache_dir",
                         "runtime.job_caches", "runtime.progress", "runtime.retry_failed"})
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# an absolute path (POSIX, home, Windows) at the start of a value, a list item or a `key=` value
_ABS_PATH = re.compile(r"(?<![^\[,\s=])(?:~|[A-Za-z]:)?[/\\][^,\]\s]*")


def _left_out(key: str, value: str) -> bool:
    key = key.lstrip("+~")
    return key == "hydra" or key.startswith(("hydra.", "hydra/")) or key in _PLACE_KEYS or bool(_URL.match(value))


def _spec_path(value: str) -> Path | None:
    """The file a `spec=` value names: a path, or a name `compose.prepare_overrides`
    registered for a path; None for a shipped spec's name."""
    from biasaudit._util.paths import SPEC_FILES_ENV

    if "/" in value or "\\" in value or value.endswith((".yaml", ".yml")):
        path = Path(value).expanduser()
    else:
        try:
            files = json.loads(os.environ.get(SPEC_FILES_ENV) or "{}")
        except ValueError:
            files = {}
        if not isinstance(files, dict) or not isinstance(files.get(value), str):
            return None
        path = Path(files[value])
    return Path(os.path.abspath(path))


def base_names(text: str) -> str:
    """`text` with each absolute path in it cut to its base name (`/tmp/x/data.csv` ->
    `data.csv`): a name that does not depend on where the files are."""
    return _ABS_PATH.sub(lambda m: Path(m.group().replace("\\", "/")).name or m.group(), text)


def job_labels(jobs: list[list[str]]) -> list[str]:
    """Each job's overrides as a name that is the same on every machine, in every working
    directory and on every run: `spec=` by the spec file's stem (by its path below the
    files' common folder when two files of one command share a stem), any other absolute
    path by its base name; overrides that only say where files go or how progress shows
    (`runtime.cache`, `runtime.reports_dir`, ...), Hydra's own settings and URLs left out.
    `(defaults)` when nothing is left."""
    specs: dict[str, set[Path]] = {}
    for ovs in jobs:
        for ov in ovs:
            key, sep, value = ov.partition("=")
            if sep and key.lstrip("+~") == "spec" and (path := _spec_path(value)) is not None:
                specs.setdefault(path.stem, set()).add(path)
    spec_names: dict[Path, str] = {}
    for stem, paths in specs.items():
        top = os.path.commonpath([str(p.parent) for p in paths]) if len(paths) > 1 else None
        for path in paths:
            spec_names[path] = stem if top is None else Path(os.path.relpath(path, top)).as_posix()
    labels = []
    for ovs in jobs:
        kept = []
        for ov in ovs:
            key, sep, value = ov.partition("=")
            if not sep:
                kept.append(ov)
            elif key.lstrip("+~") == "spec":
                path = _spec_path(value)
                kept.append(f"{key}={spec_names[path] if path is not None else value}")
            elif not _left_out(key, value):
                kept.append(f"{key}={base_names(value)}")
        labels.append(" ".join(kept) or "(defaults)")
    return labels


def unique_names(names: list[str], tags: list[str]) -> list[str]:
    """`names` with a tag added to each one that would otherwise repeat (CI readers merge
    test cases of the same name)."""
    seen: dict[str, int] = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    return [f"{n} ({t})" if seen[n] > 1 else n for n, t in zip(names, tags, strict=True)]


def _suite(run: SuiteRun, fail_on: str) -> ET.Element:
    # the test cases' classname is the suite's name: the same threshold in two jobs of a
    # sweep (or two members of a suite) stays two tests for readers that key on classname
    name = _clean(run.name)
    ts = ET.Element("testsuite", name=name)
    tests = failures = errors = skipped = 0
    seconds = 0.0
    if run.summary is None:
        message = _clean(run.error or "the run did not finish")
        tc = ET.SubElement(ts, "testcase", classname=name, name="run", time="0")
        ET.SubElement(tc, "error", type="user_error", message=message).text = message
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
            tc = ET.SubElement(ts, "testcase", classname=name, name="run", time="0")
            ET.SubElement(tc, "error", type="UNMEASURED", message=unmeasured).text = unmeasured
            tests += 1
            errors += 1
        for v in s.verdicts:
            tests += 1
            tc = ET.SubElement(ts, "testcase", classname=name, name=_clean(case_name(v)), time="0")
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
    # junit-10.xsd allows tests, failures and errors on <testsuites>, not skipped
    totals = {"tests": 0, "failures": 0, "errors": 0}
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
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + JUNIT_MARKER.decode() + "\n"
            + ET.tostring(root, encoding="unicode") + "\n")


KEY = "--junit"
WHAT = "JUnit file"
# Marks a JUnit file biasaudit wrote: the next run replaces it; any other file at the path
# is left alone (the one writer's rule, `fileio`).
JUNIT_MARKER = b"<!-- generator: biasaudit -->"
_HINT = "choose another --junit path, or remove the file there first"


def check_junit_path(path: str | Path) -> None:
    """`--junit PATH` checked before the run starts (`fileio.check_output_file`): a
    symlink is refused (never written through), /dev/stdout, /dev/null or a terminal is
    written as a stream; a directory, FIFO, socket, other device, read-only place or a
    file biasaudit did not write (no `JUNIT_MARKER`) is a one-line error."""
    check_output_file(path, key=KEY, what=WHAT, ours=JUNIT_MARKER, hint=_HINT)


def write_junit(path: Path, runs: list[SuiteRun], fail_on: str = DEFAULT_FAIL_ON, name: str = "biasaudit") -> None:
    write_output_file(path, junit_xml(runs, fail_on, name), key=KEY, what=WHAT, ours=JUNIT_MARKER, hint=_HINT)


def write_junit_error(path: str | Path, message: str, name: str = "biasaudit run") -> None:
    """A run stopped by a user error before any job ran: one errored test case whose
    message is the one-line error, so CI shows why."""
    write_junit(Path(path), [SuiteRun(name=name, error=message)])


__all__ = ["SuiteRun", "base_names", "check_junit_path", "job_labels", "junit_xml", "unique_names", "write_junit",
           "write_junit_error"]
