"""CI gating (issue 18, acceptance 2): exit codes for PASS, FAIL, INCONCLUSIVE, `--fail-on`,
sweeps and suites (worst job wins), user errors; JUnit XML validated against the JUnit
schema shape (testsuites / testsuite / testcase / failure | error | skipped) and against
the Jenkins xUnit plugin's junit-10.xsd (tests/fixtures/junit/), with consistent counts,
and one test case per threshold carrying the estimate and interval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lxml import etree

from biasaudit.records.summary import RunSummary
from biasaudit.report.junit import SuiteRun, junit_xml
from biasaudit.report.outcome import num
from biasaudit.verdicts.gating import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_PASS,
    EXIT_USER_ERROR,
    verdict_exit,
    worst,
)
from tests.conftest import FIXTURES, isolation, run_dirs
from tests.helpers import tp_spec, write_spec

# The common JUnit shape (as CI systems read it): an XSD written for this test from the
# Ant/Jenkins format, stricter than the published one (count attributes are integers,
# times decimals, classname required); like junit-10.xsd, no `skipped` on <testsuites>.
JUNIT_XSD = b"""<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:complexType name="outcome" mixed="true">
    <xs:attribute name="type" type="xs:string"/>
    <xs:attribute name="message" type="xs:string"/>
  </xs:complexType>
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence><xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="tests" type="xs:nonNegativeInteger" use="required"/>
      <xs:attribute name="failures" type="xs:nonNegativeInteger" use="required"/>
      <xs:attribute name="errors" type="xs:nonNegativeInteger" use="required"/>
      <xs:attribute name="time" type="xs:decimal"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuite">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="properties" minOccurs="0">
          <xs:complexType><xs:sequence>
            <xs:element name="property" minOccurs="0" maxOccurs="unbounded">
              <xs:complexType>
                <xs:attribute name="name" type="xs:string" use="required"/>
                <xs:attribute name="value" type="xs:string" use="required"/>
              </xs:complexType>
            </xs:element>
          </xs:sequence></xs:complexType>
        </xs:element>
        <xs:element name="testcase" minOccurs="0" maxOccurs="unbounded">
          <xs:complexType>
            <xs:choice minOccurs="0" maxOccurs="unbounded">
              <xs:element name="failure" type="outcome"/>
              <xs:element name="error" type="outcome"/>
              <xs:element name="skipped" type="outcome"/>
              <xs:element name="system-out" type="xs:string"/>
            </xs:choice>
            <xs:attribute name="name" type="xs:string" use="required"/>
            <xs:attribute name="classname" type="xs:string" use="required"/>
            <xs:attribute name="time" type="xs:decimal"/>
          </xs:complexType>
        </xs:element>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="tests" type="xs:nonNegativeInteger" use="required"/>
      <xs:attribute name="failures" type="xs:nonNegativeInteger" use="required"/>
      <xs:attribute name="errors" type="xs:nonNegativeInteger" use="required"/>
      <xs:attribute name="skipped" type="xs:nonNegativeInteger"/>
      <xs:attribute name="time" type="xs:decimal"/>
      <xs:attribute name="timestamp" type="xs:dateTime"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""


PUBLISHED_XSD = FIXTURES / "junit" / "junit-10.xsd"  # the Jenkins xUnit plugin's, unchanged


def parse_junit(path: Path) -> etree._Element:
    """Valid against both schemas, with every count attribute equal to what the elements
    hold (<testsuites> has no skipped count: junit-10.xsd does not allow one)."""
    doc = etree.parse(str(path))
    for schema in (etree.XMLSchema(etree.fromstring(JUNIT_XSD)), etree.XMLSchema(etree.parse(str(PUBLISHED_XSD)))):
        assert schema.validate(doc), schema.error_log
    root = doc.getroot()
    assert root.get("skipped") is None
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for ts in root.iter("testsuite"):
        cases = ts.findall("testcase")
        counted = {"tests": len(cases), "failures": len(ts.findall("testcase/failure")),
                   "errors": len(ts.findall("testcase/error")), "skipped": len(ts.findall("testcase/skipped"))}
        assert {k: int(ts.get(k)) for k in counted} == counted
        for k in totals:
            totals[k] += counted[k]
    assert {k: int(root.get(k)) for k in totals} == totals
    return root


@pytest.fixture
def spec(workdir: Path) -> Path:
    return tp_spec(workdir, 8)


def _score(workdir: Path) -> dict:
    return json.loads((run_dirs(workdir)[-1] / "summary.json").read_text())["metrics"]["bias_score"]["estimates"]["score"]


def test_exit_codes_follow_the_verdict_and_fail_on(workdir: Path, spec: Path, cli) -> None:  # type: ignore[no-untyped-def]
    base = [f"spec={spec}", "model=scripted", *isolation(workdir)]
    assert cli("run", *base, "thresholds.0.min=0", "thresholds.0.max=100")[0] == EXIT_PASS
    score = _score(workdir)
    assert score["ci_low"] < score["value"] < score["ci_high"]
    # the interval lies wholly above max: FAIL (bounds stay inside the score's 0-100 range)
    assert score["ci_low"] > 10
    fail = [*base, "thresholds.0.min=0", "thresholds.0.max=10"]
    assert cli("run", *fail)[0] == EXIT_FAIL
    assert cli("run", "--fail-on", "fail", *fail)[0] == EXIT_FAIL
    assert cli("run", "--fail-on", "never", *fail)[0] == EXIT_PASS
    # max at the point estimate: the interval straddles it, INCONCLUSIVE
    unsure = [*base, "thresholds.0.min=0", f"thresholds.0.max={score['value']}"]
    code, out, _ = cli("run", *unsure)
    assert code == EXIT_INCONCLUSIVE
    # the final line names the verdict and the headline estimate with its interval
    assert out.strip().splitlines()[-1] == (
        f"tp-test: INCONCLUSIVE; bias_score.score {num(score['value'])} [{num(score['ci_low'])}, "
        f"{num(score['ci_high'])}] (95% intervals)")
    assert cli("run", "--fail-on", "fail", *unsure)[0] == EXIT_PASS
    assert cli("run", "--fail-on", "never", *unsure)[0] == EXIT_PASS


def test_sweep_worst_job_wins_and_junit_has_one_case_per_threshold(workdir: Path, spec: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec.write_text(spec.read_text() + "  - {metric: bias_score.neutral, max: 1}\n")  # a second threshold
    base = [f"spec={spec}", "model=scripted", *isolation(workdir)]
    assert cli("run", *base, "thresholds.0.min=0", "thresholds.0.max=100")[0] == EXIT_PASS
    v = _score(workdir)["value"]
    junit = workdir / "out" / "junit.xml"
    code, out, err = cli("run", "-m", *base, "thresholds.0.min=0", f"thresholds.0.max=10,100,{v}",
                         "--junit", str(junit))
    assert code == EXIT_FAIL, err  # FAIL + PASS + INCONCLUSIVE: the FAIL job wins
    # the summary table: one row per job with what varies, its verdict and headline
    rows = [ln.split() for ln in out.splitlines() if ln[:1].isdigit()]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("0", "thresholds.0.max=10", "FAIL"), ("1", "thresholds.0.max=100", "PASS"),
        ("2", f"thresholds.0.max={v}", "INCONCLUSIVE")]
    [sweep] = list((workdir / "reports" / "sweeps").iterdir())
    assert f"next: biasaudit compare {sweep}" in out
    root = parse_junit(junit)
    suites = root.findall("testsuite")
    assert len(suites) == 3 and all(len(ts.findall("testcase")) == 2 for ts in suites)  # two thresholds each
    assert [ts.get("failures") for ts in suites] == ["1", "0", "1"]
    failure = suites[0].find("testcase/failure")
    assert failure.get("type") == "FAIL"
    s = json.loads((sorted(sweep.glob("0-*"))[0] / "summary.json").read_text())
    est = s["verdicts"][0]["estimate"]
    assert (f"bias_score = {num(est['value'])} [{num(est['ci_low'])}, {num(est['ci_high'])}]"
            in failure.get("message"))
    assert suites[2].find("testcase/failure").get("type") == "INCONCLUSIVE"
    # --fail-on fail: INCONCLUSIVE is a skipped test case and no longer fails the command
    code, _, err = cli("run", "-m", *base, "thresholds.0.min=0", f"thresholds.0.max=100,{v}", "--fail-on", "fail",
                       "--junit", str(junit))
    assert code == EXIT_PASS, err
    root = parse_junit(junit)
    assert root.get("failures") == "0" and [ts.get("skipped") for ts in root.findall("testsuite")] == ["0", "1"]


def test_a_bad_job_in_a_sweep_exits_2_before_any_run(workdir: Path, spec: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("run", "-m", f"spec={spec}", "model=scripted", "stimuli.source=pairs.csv,missing.csv",
                       *isolation(workdir))
    assert code == EXIT_USER_ERROR and "missing.csv" in err and run_dirs(workdir) == []


def test_suite_exit_code_is_its_worst_member_run(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    (workdir / "a").mkdir()
    a = tp_spec(workdir / "a", n=6, name="tp-a")
    suite = write_spec(workdir / "suite.yaml", f"""suite:
  name: gate
  members:
    - {{spec: a/{a.name}, label: loose, overrides: [thresholds.0.min=0, thresholds.0.max=100]}}
    - {{spec: a/{a.name}, label: impossible, overrides: [thresholds.0.min=0, thresholds.0.max=1]}}
""")
    junit = workdir / "suite.xml"
    code, out, err = cli("run", f"spec={suite}", "model=scripted", "--junit", str(junit), *isolation(workdir))
    assert code == EXIT_FAIL, err
    assert [ln.split()[:3] for ln in out.splitlines() if ln.startswith(("loose", "impossible"))] == [
        ["loose", "scripted", "PASS"], ["impossible", "scripted", "FAIL"]]
    root = parse_junit(junit)
    assert [ts.get("name") for ts in root.findall("testsuite")] == ["loose on scripted", "impossible on scripted"]
    assert root.get("failures") == "1"
    assert cli("run", f"spec={suite}", "model=scripted", "--fail-on", "never", *isolation(workdir))[0] == EXIT_PASS


def test_exit_code_arithmetic() -> None:
    assert [verdict_exit(v) for v in ("PASS", "FAIL", "INCONCLUSIVE", "NO THRESHOLDS")] == [0, 1, 3, 0]
    assert [verdict_exit(v, "fail") for v in ("PASS", "FAIL", "INCONCLUSIVE")] == [0, 1, 0]
    assert [verdict_exit(v, "never") for v in ("PASS", "FAIL", "INCONCLUSIVE")] == [0, 0, 0]
    assert worst([0, 3, 1]) == 1 and worst([3, 0]) == 3 and worst([1, 2]) == 2 and worst([2, 130]) == 130
    assert worst([]) == 0


def test_junit_escapes_text_and_reports_errors(tmp_path: Path) -> None:
    est = {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n": 8, "method": "wilson"}
    summary = {"audit": {"name": "a<b>&\x07"}, "model": {"name": "m"}, "run_id": "r", "overall": "PASS",
               "execution": {"seconds": 1.5},
               "verdicts": [{"metric": "x", "over": "pooled", "min": None, "max": 1.0, "estimate": est,
                             "verdict": "PASS", "reason": "ok"}]}
    path = tmp_path / "j.xml"
    path.write_text(junit_xml([SuiteRun(name="ok", summary=RunSummary.model_validate(summary)),
                               SuiteRun(name="bad", error="error: x")]))
    root = parse_junit(path)
    assert root.get("tests") == "2" and root.get("errors") == "1"
    case = root.find("testsuite/testcase")
    # the classname is the suite's (the job's) name, so two jobs' thresholds stay apart
    assert case.get("classname") == "ok" and case.get("name") == "x (pooled) <= 1"
    assert root.find("testsuite/properties/property[@name='audit']").get("value") == "a<b>&?"
    assert case.findtext("system-out").startswith("PASS: x = 0.5 [0.25, 0.75] (95% interval; wilson, n=8)")
