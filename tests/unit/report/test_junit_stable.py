"""CI papercuts (issue 29, point 7): JUnit names stable across runs and machines, the
file valid against the published JUnit schema (the Jenkins xUnit plugin's junit-10.xsd,
copied unchanged to tests/fixtures/junit/), a JUnit file on a user error too, and
`validate path.yaml` without `spec=`."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from lxml import etree

from biasaudit.report.junit import job_labels
from biasaudit.verdicts.gating import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_PASS,
    EXIT_UNMEASURED,
    EXIT_USER_ERROR,
)
from tests.conftest import FIXTURES, isolation, run_dirs
from tests.helpers import expected_exit, tp_spec, write_spec

XSD = FIXTURES / "junit" / "junit-10.xsd"
ALL_FAIL = ["+model.script.fail_every=1"]  # every model request fails: the run could not measure


def published_valid(path: Path) -> etree._Element:
    """The file validated against junit-10.xsd; its count attributes match its elements."""
    doc = etree.parse(str(path))
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    assert schema.validate(doc), schema.error_log
    root = doc.getroot()
    assert root.tag == "testsuites" and set(root.attrib) <= {"name", "time", "tests", "failures", "errors"}
    totals = dict.fromkeys(("tests", "failures", "errors"), 0)
    for ts in root.findall("testsuite"):
        counted = {"tests": len(ts.findall("testcase")), "failures": len(ts.findall("testcase/failure")),
                   "errors": len(ts.findall("testcase/error")), "skipped": len(ts.findall("testcase/skipped"))}
        assert {k: int(ts.get(k, "0")) for k in counted} == counted
        for k in totals:
            totals[k] += counted[k]
    assert {k: int(root.get(k, "-1")) for k in totals} == totals
    return root


def names(root: etree._Element) -> set[tuple[str, str, str]]:
    """(testsuite name, classname, testcase name) of every test case, and the file's name."""
    out = {("testsuites", "", root.get("name", ""))}
    for ts in root.findall("testsuite"):
        out |= {(ts.get("name"), tc.get("classname"), tc.get("name")) for tc in ts.findall("testcase")}
    return out


def props(root: etree._Element, key: str) -> list[str]:
    return [p.get("value") for p in root.iter("property") if p.get("name") == key]


def _machine(base: Path) -> Path:
    """A checkout of an audit project: the spec and its data, a cache and a reports folder."""
    base.mkdir(parents=True)
    (base / "reports").mkdir()
    tp_spec(base, 8)
    return base


# -- stable names --------------------------------------------------------------------------------

def test_names_are_the_same_on_two_machines_in_two_folders_at_two_times(tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    roots = []
    one, two = _machine(tmp_path / "runner-1" / "audit"), _machine(tmp_path / "elsewhere" / "ci" / "work" / "audit")
    # the same command from each checkout's root (as CI runs it), paths on the command line
    # absolute to that machine, and a third run of the first checkout's spec from another folder
    runs = [(one, one, "spec=tp-test.yaml"), (two, two, "spec=tp-test.yaml"),
            (tmp_path, one, f"spec={one / 'tp-test.yaml'}"), (two, two, "tp-test.yaml")]
    for cwd, home, spec in runs:
        monkeypatch.chdir(cwd)
        code, _, err = cli("run", spec, "model=scripted", f"stimuli.source={home / 'pairs.csv'}",
                           f"+model.script.calls_log={home / 'calls.log'}", *isolation(home), "--junit", "junit.xml")
        assert code == expected_exit(home), err
        roots.append(published_valid(cwd / "junit.xml"))
    first = names(roots[0])
    assert all(names(r) == first for r in roots[1:]), [sorted(names(r)) for r in roots]
    assert ("tp-test: spec=tp-test model=scripted stimuli.source=pairs.csv +model.script.calls_log=calls.log",
            "tp-test: spec=tp-test model=scripted stimuli.source=pairs.csv +model.script.calls_log=calls.log",
            "bias_score (pooled) within [40, 60]") in first
    text = " ".join(n for triple in first for n in triple)
    assert str(tmp_path) not in text and "/" not in text and "reports" not in text and "cache" not in text
    host = socket.gethostname()
    assert len(host) < 4 or host not in text
    # the runs differ (ids, times, run folders): only the properties say so
    ids = [props(r, "run_id")[0] for r in roots]
    assert len(set(ids)) == len(ids) and not any(i in text for i in ids)


def test_sweep_names_are_the_same_from_two_checkouts(tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    found = []
    for base in (tmp_path / "a", tmp_path / "b" / "deeper"):
        home = _machine(base)
        monkeypatch.chdir(home)
        code, _, err = cli("run", "-m", f"spec={home / 'tp-test.yaml'}", "model=scripted", *isolation(home),
                           "thresholds.0.min=0", "thresholds.0.max=1,100", "--junit", str(home / "j.xml"))
        assert code == expected_exit(home, jobs=2), err
        found.append(names(published_valid(home / "j.xml")))
    assert found[0] == found[1]
    suites = sorted({s for s, _, _ in found[0]} - {"testsuites"})
    assert suites == ["tp-test: spec=tp-test model=scripted thresholds.0.min=0 thresholds.0.max=1",
                      "tp-test: spec=tp-test model=scripted thresholds.0.min=0 thresholds.0.max=100"]


def test_job_labels_leave_out_places_and_keep_what_is_measured() -> None:
    labels = job_labels([
        ["spec=/tmp/x1/a/audit.yaml", "model=scripted", "runtime.cache=/tmp/x1/c.sqlite",
         "runtime.reports_dir=/tmp/x1/reports", "runtime.progress=false", "runtime.job_cache_dir=/tmp/jc",
         "runtime.retry_failed=true", "hydra.searchpath=[file:///tmp/x1/conf]", "hydra/launcher=joblib",
         "model.base_url=http://10.1.2.3:8000/v1", "stimuli.source=/data/crows.csv", "runtime.seed=3", "~probe.x"],
        ["spec=/tmp/x1/b/audit.yaml", "stimuli.source=data/crows.csv"],  # same stem, another file
        ["spec=crows_pairs_tp", "+x=[/p/q.csv,r.csv]"],
        ["runtime.cache=/tmp/only.sqlite"],
    ])
    assert labels == ["spec=a/audit.yaml model=scripted stimuli.source=crows.csv runtime.seed=3 ~probe.x",
                      "spec=b/audit.yaml stimuli.source=data/crows.csv",
                      "spec=crows_pairs_tp +x=[q.csv,r.csv]",
                      "(defaults)"]
    assert job_labels([["spec=/tmp/x1/a/audit.yaml"]]) == job_labels([["spec=/home/ci/w/audit.yaml"]]) == ["spec=audit"]


def test_two_jobs_with_the_same_name_are_told_apart_by_job_number(workdir: Path, cli,  # type: ignore[no-untyped-def]
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # the sweep's own folder (multirun.yaml) follows the unswept runtime.reports_dir, the
    # default `reports` relative to the working directory: here, not the checkout
    monkeypatch.chdir(workdir)
    spec = tp_spec(workdir, 6)
    junit = workdir / "j.xml"
    # the sweep varies only where the reports go: left out of the names, so the job number tells them apart
    code, _, err = cli("run", "-m", f"spec={spec}", "model=scripted", f"runtime.cache={workdir / 'c.sqlite'}",
                       f"runtime.reports_dir={workdir / 'reports'},{workdir / 'reports' / 'again'}",
                       "runtime.progress=false", "--junit", str(junit))
    assert code in (EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE), err
    suites = [ts.get("name") for ts in published_valid(junit).findall("testsuite")]
    assert suites == ["tp-test: spec=tp-test model=scripted (job 0)", "tp-test: spec=tp-test model=scripted (job 1)"]


# -- valid against junit-10.xsd: every kind of outcome --------------------------------------------

def _score(workdir: Path) -> float:
    s = json.loads((run_dirs(workdir)[-1] / "summary.json").read_text())
    return float(s["metrics"]["bias_score"]["estimates"]["score"]["value"])


def _suite(workdir: Path) -> list[str]:
    (workdir / "a").mkdir()
    a = tp_spec(workdir / "a", n=6, name="tp-a")
    suite = write_spec(workdir / "suite.yaml", f"""suite:
  name: gate
  members:
    - {{spec: a/{a.name}, label: loose, overrides: [thresholds.0.min=0, thresholds.0.max=100]}}
    - {{spec: a/{a.name}, label: impossible, overrides: [thresholds.0.min=0, thresholds.0.max=1]}}
""")
    return [f"spec={suite}"]


CASES = {  # name: (extra arguments, exit code, the test case's outcome element)
    "pass": (["thresholds.0.min=0", "thresholds.0.max=100"], EXIT_PASS, "system-out"),
    "fail": (["thresholds.0.min=0", "thresholds.0.max=1"], EXIT_FAIL, "failure"),
    "inconclusive": (["thresholds.0.min=0", "thresholds.0.max={score}"], EXIT_INCONCLUSIVE, "failure"),
    "inconclusive, --fail-on fail": (["thresholds.0.min=0", "thresholds.0.max={score}", "--fail-on", "fail"],
                                     EXIT_PASS, "skipped"),
    "unmeasured": (ALL_FAIL, EXIT_UNMEASURED, "error"),
    "sweep": (["-m", "thresholds.0.min=0", "thresholds.0.max=1,100"], EXIT_FAIL, None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_junit_is_valid_against_the_published_xsd(workdir: Path, cli, case: str) -> None:  # type: ignore[no-untyped-def]
    extra, code, outcome = CASES[case]
    spec = tp_spec(workdir, 8)
    base = [f"spec={spec}", "model=scripted", *isolation(workdir)]
    if any("{score}" in a for a in extra):
        assert cli("run", *base, "thresholds.0.min=0", "thresholds.0.max=100")[0] == EXIT_PASS
        extra = [a.format(score=_score(workdir)) for a in extra]
    junit = workdir / "out.xml"
    got, _, err = cli("run", *base, *extra, "--junit", str(junit))
    assert got == code, err
    root = published_valid(junit)
    cases = root.findall("testsuite/testcase")
    if outcome is None:  # the sweep: one suite per job, one FAIL and one PASS
        assert len(root.findall("testsuite")) == 2 and root.get("failures") == "1"
    else:
        [tc] = cases
        assert tc.find(outcome) is not None
        assert tc.get("classname") == root.find("testsuite").get("name")


def test_a_suite_is_valid_against_the_published_xsd(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    junit = workdir / "suite.xml"
    code, _, err = cli("run", *_suite(workdir), "model=scripted", "--junit", str(junit), *isolation(workdir))
    assert code == EXIT_FAIL, err
    root = published_valid(junit)
    assert root.get("name") == "gate"
    assert [ts.get("name") for ts in root.findall("testsuite")] == ["loose on scripted", "impossible on scripted"]


# -- a user error: one errored test case ----------------------------------------------------------

@pytest.mark.parametrize("bad", ["stimuli.format=nope", "no<such>&'spec'.yaml", "--no-such-flag"])
def test_a_user_error_writes_one_errored_case_and_nothing_else(workdir: Path, cli, bad: str) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    junit = workdir / "ci" / "junit.xml"
    args = ["run", *([] if bad.endswith(".yaml") else [f"spec={spec}"]), "model=scripted", *isolation(workdir),
            bad, "--junit", str(junit)]
    if bad.startswith("--"):  # argparse's own error (exit 2)
        with pytest.raises(SystemExit) as exc:
            cli(*args)
        assert exc.value.code == EXIT_USER_ERROR
        line = f"error: unrecognized arguments: {bad} (hint: see `biasaudit run --help`)"
    else:
        code, _, err = cli(*args)
        [line] = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert code == EXIT_USER_ERROR and "hint:" in line
    root = published_valid(junit)
    assert (root.get("tests"), root.get("errors"), root.get("failures")) == ("1", "1", "0")
    [error] = root.findall("testsuite/testcase/error")
    assert error.get("message") == line == error.text and error.get("type") == "user_error"
    assert names(root) == {("testsuites", "", "biasaudit"), ("biasaudit run", "biasaudit run", "run")}
    # nothing else written: no run folder, no temporary file beside the JUnit file
    assert run_dirs(workdir) == [] and not any((workdir / "reports").iterdir())
    assert sorted(p.name for p in junit.parent.iterdir()) == ["junit.xml"]


# -- `validate path.yaml` --------------------------------------------------------------------------

def test_validate_takes_a_spec_file_without_spec_equals(workdir: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, 4)
    monkeypatch.chdir(workdir)
    with_key = cli("validate", f"spec={spec.name}")
    assert with_key[0] == 0, with_key
    assert cli("validate", spec.name) == with_key
    assert cli("validate", str(spec), "audit.name=other")[0] == 0
    # a suite file too
    suite = _suite(workdir)[0].removeprefix("spec=")
    code, out, err = cli("validate", suite)
    assert code == 0 and out.startswith(f"ok: suite {suite}"), err
    # and run: the same run as with spec=
    code, out, err = cli("run", spec.name, "model=scripted", *isolation(workdir))
    assert code == expected_exit(workdir) and "tp-test:" in out, err


@pytest.mark.parametrize("args, must", [
    (["missing.yaml"], "'missing.yaml' is neither a spec file nor an override (key=value)"),
    (["model"], "'model' is neither a spec file nor an override"),
    (["."], "'.' is a folder, not a spec file"),
    (["tp-test.yaml", "tp-test.yaml"], "2 spec files given"),
    (["tp-test.yaml", "spec=crows_pairs_tp"], "a spec file (tp-test.yaml) and spec=crows_pairs_tp both given"),
])
def test_a_bad_positional_is_one_line_with_a_hint(workdir: Path, cli, monkeypatch, args: list[str], must: str) -> None:  # type: ignore[no-untyped-def]
    tp_spec(workdir, 4)
    monkeypatch.chdir(workdir)
    for command in ("validate", "run", "plan"):
        code, out, err = cli(command, *args)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == EXIT_USER_ERROR and len(lines) == 1 and "Traceback" not in err, (command, err)
        assert lines[0].startswith("error: ") and must in lines[0] and "(hint: " in lines[0], lines[0]
    assert run_dirs(workdir) == []


def test_help_shows_the_spec_file_argument(cli) -> None:  # type: ignore[no-untyped-def]
    for command in ("validate", "run"):
        with pytest.raises(SystemExit):
            cli(command, "--help")
    from biasaudit.cli.app import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[attr-defined]
    for command in ("validate", "run", "plan", "calibrate"):
        assert "[SPEC_FILE] [overrides...]" in sub[command].format_usage()
    assert "biasaudit validate path/to/spec.yaml" in sub["validate"].format_help()
