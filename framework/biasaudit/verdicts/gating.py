"""Exit codes for CI gating, and the ledger that collects every job's outcome.

| code | meaning |
|---|---|
| 0 | every threshold PASS (or the spec states none) |
| 1 | at least one threshold FAIL |
| 2 | user error: bad spec, data, override or environment (one line on stderr) |
| 3 | no FAIL, but at least one INCONCLUSIVE |
| 4 | could not measure: more than `validity.max_failed_share` of the run's model requests failed |
| 130 | interrupted (Ctrl-C); finished model calls are kept |

`--fail-on` chooses which verdicts fail the command: `inconclusive` (the default: the table
above), `fail` (INCONCLUSIVE exits 0), `never` (verdicts never fail it; user errors and
interrupts still do). A run that could not measure exits 4 under `inconclusive` and
`fail` alike: its INCONCLUSIVE says nothing about the model, only that the server, the
network or the key failed, so letting it pass with `--fail-on fail` would hide an audit
that never happened. Suites and sweeps exit with their worst job's code, in the order
130 > 2 > 4 > 1 > 3 > 0.

Jobs may run in other processes (Hydra's joblib launcher), so each job appends one JSON
line to a ledger file named in the environment the workers inherit, and the command reads
it back when the launcher returns.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from biasaudit._util.trail import append_json_line, json_records, write_json_lines
from biasaudit.errors import BiasAuditError
from biasaudit.records.jobs import JobOutcome
from biasaudit.records.upgrade import current, validated

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_USER_ERROR = 2
EXIT_INCONCLUSIVE = 3
EXIT_UNMEASURED = 4
EXIT_INTERRUPTED = 130

FAIL_ON = ("inconclusive", "fail", "never")
DEFAULT_FAIL_ON = "inconclusive"

# worst first: an interrupt or a user error says more than any verdict, and a run that
# measured nothing more than a FAIL: the audit itself did not happen, and must be fixed first
_SEVERITY = {EXIT_INTERRUPTED: 5, EXIT_USER_ERROR: 4, EXIT_UNMEASURED: 3, EXIT_FAIL: 2, EXIT_INCONCLUSIVE: 1,
             EXIT_PASS: 0}

LEDGER_ENV = "BIASAUDIT_STATUS_FILE"


def verdict_exit(overall: str, fail_on: str = DEFAULT_FAIL_ON, measured: bool = True) -> int:
    """The exit code of one run (or suite) whose overall verdict is `overall`; `measured`
    False: too many of its model requests failed (`RunSummary.measured`)."""
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail_on must be one of {FAIL_ON}, not {fail_on!r}")
    if fail_on == "never":
        return EXIT_PASS
    if not measured:
        return EXIT_UNMEASURED
    if overall == "FAIL":
        return EXIT_FAIL
    if overall == "INCONCLUSIVE" and fail_on == "inconclusive":
        return EXIT_INCONCLUSIVE
    return EXIT_PASS  # PASS, NO THRESHOLDS, or INCONCLUSIVE with --fail-on fail


def worst(codes: Iterable[int]) -> int:
    """The code of the worst job (0 when there were none)."""
    return max(codes, key=lambda c: _SEVERITY.get(c, _SEVERITY[EXIT_USER_ERROR]), default=EXIT_PASS)


class Ledger:
    """One JSON line per finished job (`records.jobs.JobOutcome`): its overrides, and its
    overall verdict, whether it measured and its run folder, or the error that stopped it."""

    def __init__(self) -> None:
        # a private scratch folder (made new, mode 0700) holds the ledger file
        self._dir = Path(tempfile.mkdtemp(prefix="biasaudit-jobs-"))
        self.path = self._dir / "jobs.jsonl"
        write_json_lines(self.path, [], kind="jobs")  # the header, before any job appends its line
        name = str(self.path)
        self._saved = os.environ.get(LEDGER_ENV)
        os.environ[LEDGER_ENV] = name

    @staticmethod
    def record(entry: JobOutcome) -> None:
        """Append one job's outcome (from whichever process ran it)."""
        path = os.environ.get(LEDGER_ENV)
        if not path:
            return
        append_json_line(path, entry.ledger_record(), key=LEDGER_ENV, what="jobs ledger")  # one short write: parallel workers' lines do not interleave

    def entries(self) -> list[JobOutcome]:
        if not self.path.is_file():
            return []
        name = str(self.path)
        return [validated("jobs", JobOutcome, row, file=f"{name}: line {i}", version=current("jobs"))[0]
                for i, row in json_records(self.path.read_bytes(), file=name, error=BiasAuditError, kind="jobs")]

    def close(self) -> None:
        self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self._dir.rmdir()
        if self._saved is None:
            os.environ.pop(LEDGER_ENV, None)
        else:
            os.environ[LEDGER_ENV] = self._saved




def add_gate_args(parser: Any) -> None:
    """`--fail-on` and `--junit` for an argparse (sub)parser."""
    parser.add_argument("--fail-on", choices=FAIL_ON, default=DEFAULT_FAIL_ON,
                        help="which verdicts make the exit code non-zero: inconclusive (default: FAIL exits 1, "
                             "INCONCLUSIVE 3), fail (INCONCLUSIVE exits 0), never (only errors and interrupts); "
                             "a run that could not measure (too many failed requests) exits 4 under both "
                             "inconclusive and fail")
    parser.add_argument("--junit", metavar="PATH", default=None,
                        help="also write the verdicts as JUnit XML (one test case per threshold, names stable "
                             "across runs and machines; valid against the Jenkins xUnit junit-10.xsd); a user "
                             "error writes one errored test case with the error line")


def gate_flags(args: Any) -> list[str]:
    """The gating flags as typed, for the command a run records and prints to resume it."""
    out = []
    if getattr(args, "fail_on", DEFAULT_FAIL_ON) != DEFAULT_FAIL_ON:
        out += ["--fail-on", args.fail_on]
    if getattr(args, "junit", None):
        out += ["--junit", args.junit]
    return out


__all__ = ["DEFAULT_FAIL_ON", "EXIT_FAIL", "EXIT_INCONCLUSIVE", "EXIT_INTERRUPTED", "EXIT_PASS",
           "EXIT_UNMEASURED", "EXIT_USER_ERROR", "FAIL_ON", "Ledger", "add_gate_args", "gate_flags", "verdict_exit", "worst"]
