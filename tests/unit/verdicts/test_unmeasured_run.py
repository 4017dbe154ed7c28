"""A run that could not measure (issue: "an all-failed run hides it"): when more than
`validity.max_failed_share` of a run's model requests fail, every verdict is
INCONCLUSIVE with the count and the top failure reasons, the CLI's last line and
summary.json say the run could not measure, and the command exits 4 under
`--fail-on inconclusive` and `--fail-on fail` (0 under `never`); in suites and sweeps the
worst job wins (130 > 2 > 4 > 1 > 3 > 0). No threshold error and no traceback on zero
answers, and JUnit marks such a run as an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasaudit.cli.run_end import end_jobs
from biasaudit.metrics.validity import failure_flag
from biasaudit.records.estimate import Estimate
from biasaudit.records.jobs import JobOutcome
from biasaudit.records.metric_result import MetricResult
from biasaudit.records.summary import RunSummary
from biasaudit.report.junit import SuiteRun, junit_xml
from biasaudit.spec import ThresholdSpec
from biasaudit.verdicts.gating import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_INTERRUPTED,
    EXIT_PASS,
    EXIT_UNMEASURED,
    EXIT_USER_ERROR,
    verdict_exit,
    worst,
)
from biasaudit.verdicts.thresholds import evaluate
from tests.conftest import isolation, run_dirs
from tests.helpers import expected_exit, tp_spec, write_spec
from tests.report_checks import check_report, unexplained_numbers
from tests.support.fault_server import Fault, FaultServer
from tests.unit.verdicts.test_ci_gating import parse_junit

ALL_FAIL = ["model=scripted", "+model.script.fail_every=1"]


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


def _last(out: str) -> str:
    return out.strip().splitlines()[-1]


# -- exit codes ----------------------------------------------------------------------------

def test_exit_code_4_only_for_unmeasured_runs_and_its_place_in_the_order() -> None:
    assert EXIT_UNMEASURED == 4
    for overall in ("PASS", "FAIL", "INCONCLUSIVE", "NO THRESHOLDS"):
        assert verdict_exit(overall, "inconclusive", measured=False) == EXIT_UNMEASURED
        assert verdict_exit(overall, "fail", measured=False) == EXIT_UNMEASURED
        assert verdict_exit(overall, "never", measured=False) == EXIT_PASS
    assert verdict_exit("INCONCLUSIVE", "fail") == EXIT_PASS  # a measured INCONCLUSIVE still passes there
    assert worst([EXIT_PASS, EXIT_INCONCLUSIVE, EXIT_FAIL, EXIT_UNMEASURED]) == EXIT_UNMEASURED
    assert worst([EXIT_UNMEASURED, EXIT_USER_ERROR]) == EXIT_USER_ERROR
    assert worst([EXIT_UNMEASURED, EXIT_INTERRUPTED]) == EXIT_INTERRUPTED
    assert worst([EXIT_INCONCLUSIVE, EXIT_FAIL]) == EXIT_FAIL


def test_sweep_jobs_worst_code_wins(capsys: pytest.CaptureFixture[str]) -> None:
    jobs = [JobOutcome(job=0, overall="PASS", measured=True),
            JobOutcome(job=1, overall="INCONCLUSIVE", measured=False, unmeasured_reason="9/9 requests failed"),
            JobOutcome.model_validate({"job": 2, "overall": "FAIL"})]  # a ledger line from before `measured`: measured
    assert end_jobs(jobs, multirun=False, fail_on="inconclusive", junit=None) == EXIT_UNMEASURED
    assert end_jobs(jobs, multirun=False, fail_on="fail", junit=None) == EXIT_UNMEASURED
    assert end_jobs(jobs, multirun=False, fail_on="never", junit=None) == EXIT_PASS
    assert end_jobs([*jobs, JobOutcome(job=3, error="bad spec")], multirun=False, fail_on="fail", junit=None) == 2


def test_failure_reasons_name_kind_count_and_one_message() -> None:
    f = failure_flag(84, 84, [("server_error", "HTTP 500")] * 60 + [("timeout", "no answer in 60 s")] * 24, 0.05)
    assert f is not None
    assert f.message == ("84/84 requests failed (100%, above the 5% bound validity.max_failed_share): "
                         "server_error 60 (HTTP 500); timeout 24 (no answer in 60 s)")
    more = failure_flag(5, 5, [(k, None) for k in ("a", "a", "b", "c", "d")], 0.05)
    assert more is not None and more.message.endswith(": a 2; b 1; c 1; 1 other kind(s) (1)")
    assert failure_flag(2, 40, ["timeout"] * 2, 0.05) is None


# -- an all-failed run, end to end ---------------------------------------------------------

@pytest.mark.parametrize(("fail_on", "code"), [("inconclusive", EXIT_UNMEASURED), ("fail", EXIT_UNMEASURED),
                                               ("never", EXIT_PASS)])
def test_all_failed_scripted_run_could_not_measure(workdir: Path, cli, fail_on: str, code: int) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, n=10)
    got, out, err = cli("run", "--fail-on", fail_on, f"spec={spec}", *ALL_FAIL, *isolation(workdir))
    assert got == code, err
    assert "Traceback" not in err and "threshold" not in err
    reason = ("20/20 requests failed (100%, above the 5% bound validity.max_failed_share): "
              "other 20 (scripted failure)")
    assert _last(out).startswith(f"tp-test: INCONCLUSIVE, could not measure: {reason}; bias_score.score")
    [d] = run_dirs(workdir)
    s = _summary(d)
    assert s["measured"] is False and s["unmeasured_reason"] == reason
    assert s["overall"] == "INCONCLUSIVE"
    assert all(v["verdict"] == "INCONCLUSIVE" and v["blocked"] for v in s["verdicts"])
    assert s["verdicts"][0]["reason"].startswith(f"not decidable: {reason}")
    assert s["executive"]["text"].startswith(f"The run could not measure: {reason}.")
    for fmt in ("html", "md"):
        report = (d / f"report.{fmt}").read_text(encoding="utf-8")
        section = report[report.index("Can these numbers decide?"):]
        assert "this run could not measure" in section[:600] and "20/20 requests failed" in section[:600]
    check_report(d)  # every number the report shows is in summary.json
    if fail_on == "inconclusive":
        assert got == expected_exit(workdir)


def test_one_failure_in_forty_keeps_the_normal_verdict(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, n=20)
    code, out, err = cli("run", f"spec={spec}", "model=scripted", "+model.script.fail_every=40",
                         "thresholds.0.min=0", "thresholds.0.max=100", *isolation(workdir))
    [d] = run_dirs(workdir)
    s = _summary(d)
    assert s["execution"]["requests"] == 40 and s["execution"]["failures"] == 1
    assert s["measured"] is True and s["unmeasured_reason"] is None
    assert not any(f["kind"] == "failed_requests" for f in s["validity"])
    assert s["overall"] == "PASS" and code == EXIT_PASS == expected_exit(workdir), err
    assert "could not measure" not in out


def test_the_bound_is_a_setting(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, n=10)
    base = [f"spec={spec}", "model=scripted", "+model.script.fail_every=2", *isolation(workdir)]
    # half the requests failed: above the default 5%, could not measure
    code, out, err = cli("run", *base)
    assert code == EXIT_UNMEASURED, err
    assert "10/20 requests failed (50%, above the 5% bound" in _last(out)
    # a bound of 0.5 lets a run with half its requests failed count as measured: its own
    # verdict (INCONCLUSIVE: too few pairs gave a usable answer) decides the code
    code, out, err = cli("run", *base, "validity.max_failed_share=0.5")
    s = _summary(run_dirs(workdir)[-1])
    assert s["measured"] is True and code == EXIT_INCONCLUSIVE, err
    assert "could not measure" not in _last(out)
    assert "gave a usable answer" in s["verdicts"][0]["reason"]
    # an all-failed run is above any bound below 1 (its own cache: the one above holds answers)
    fresh = workdir / "fresh"
    (fresh / "reports").mkdir(parents=True)
    code, out, _ = cli("run", f"spec={spec}", *ALL_FAIL, *isolation(fresh), "validity.max_failed_share=0.5")
    assert code == EXIT_UNMEASURED and "20/20 requests failed (100%, above the 50% bound" in _last(out)


def test_sweep_exits_with_its_unmeasured_job(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, n=10)
    code, out, err = cli("run", "-m", f"spec={spec}", "model=scripted", "+model.script.fail_every=2",
                         "validity.max_failed_share=0.05,0.5", *isolation(workdir))
    assert code == EXIT_UNMEASURED, err
    assert sorted(_summary(d)["measured"] for d in run_dirs(workdir)) == [False, True]
    assert "job 0 could not measure: 10/20 requests failed" in out


def test_suite_with_an_unmeasured_member_exits_4(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # one spec, two members: every tenth request fails (10%); the first member allows that,
    # and PASSes its 0-100 band; the second keeps the default 5% bound, and cannot measure
    spec = tp_spec(workdir, n=10)
    passing = ("[validity.max_failed_share=0.2, validity.min_valid_share=0.5, thresholds.0.min=0, "
               "thresholds.0.max=100]")
    suite = write_spec(workdir / "suite.yaml", "suite:\n  name: mini\n  members:\n"
                       f"    - {{spec: {spec.name}, label: lenient, overrides: {passing}}}\n"
                       f"    - {{spec: {spec.name}, label: strict}}\n")
    args = ["run", f"spec={suite}", "model=scripted", "+model.script.fail_every=10", *isolation(workdir)]
    code, out, err = cli(*args)
    assert code == EXIT_UNMEASURED, err
    [out_dir] = list((workdir / "reports" / "mini").iterdir())
    s = _summary(out_dir)
    rows = {r["member"]: r for r in s["rows"]}
    assert rows["lenient"]["overall"] == "PASS" and rows["lenient"]["measured"] is True
    assert rows["strict"]["measured"] is False and "2/20 requests failed (10%" in rows["strict"]["unmeasured_reason"]
    assert s["totals"]["unmeasured"] == 1
    assert "strict on scripted could not measure: 2/20 requests failed" in out
    html = (out_dir / "report.html").read_text(encoding="utf-8")
    assert "Could not measure" in html and unexplained_numbers(html, s) == []
    assert cli(*args[:1], "--fail-on", "never", *args[1:])[0] == EXIT_PASS


def test_all_failed_http_server_run_exits_4(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, n=4)
    with FaultServer(lambda prompt: Fault("http_500")) as server:
        code, out, err = cli("run", "--fail-on", "fail", f"spec={spec}", "model=openai_compat",
                             f"model.base_url={server.url}", "model.api_key_env=null", "model.max_retries=0",
                             *isolation(workdir))
    assert code == EXIT_UNMEASURED, err
    assert "Traceback" not in err
    last = _last(out)
    assert last.startswith("tp-test: INCONCLUSIVE, could not measure: 8/8 requests failed (100%")
    assert "server_error 8 (" in last and "HTTP 500" in last
    s = _summary(run_dirs(workdir)[0])
    assert s["measured"] is False and "server_error 8" in s["unmeasured_reason"]


# -- no threshold error on zero answers ---------------------------------------------------

def test_per_cell_thresholds_with_no_answers_are_undefined_not_errors() -> None:
    empty = Estimate.no_data("wilson")
    res = {"m": MetricResult(name="label_rate", headline="rate", estimates={"rate": empty}, cells={"rate": {}})}
    for over in ("worst_cell", "spread"):
        [v] = evaluate([ThresholdSpec(metric="m", over=over, max=0.5)], res)
        assert v.verdict == "INCONCLUSIVE" and v.reason == "no data"


def test_generate_and_rules_spec_with_every_request_failed_is_not_a_threshold_error(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    # refusal_stance judges a rate over its worst cell: with no answers there are no cells
    # (before: "error: thresholds: ... reports no per-cell values", exit 2)
    code, out, err = cli("run", "spec=refusal_stance", *ALL_FAIL, *isolation(workdir))
    assert code == EXIT_UNMEASURED, err
    assert "could not measure: 16/16 requests failed" in _last(out)
    s = _summary(run_dirs(workdir)[0])
    assert {v["over"] for v in s["verdicts"]} == {"pooled", "worst_cell"}
    assert all(v["verdict"] == "INCONCLUSIVE" for v in s["verdicts"])


def test_all_failed_bbq_run_could_not_measure(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("run", "spec=bbq", *ALL_FAIL, "+stimuli.sample.n=12", *isolation(workdir))
    assert code == EXIT_UNMEASURED, err
    assert "could not measure: 36/36 requests failed" in _last(out)


# -- JUnit ---------------------------------------------------------------------------------

def test_junit_marks_an_unmeasured_run_as_an_error(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = tp_spec(workdir, n=4)
    junit = workdir / "junit.xml"
    for fail_on in ("inconclusive", "never"):
        code, _, err = cli("run", "--fail-on", fail_on, "--junit", str(junit), f"spec={spec}", *ALL_FAIL,
                           *isolation(workdir))
        assert code == (EXIT_UNMEASURED if fail_on == "inconclusive" else EXIT_PASS), err
        root = parse_junit(junit)
        assert root.get("errors") == "1" and root.get("failures") == "0" and root.find("testsuite").get("skipped") == "0"
        [error] = root.iter("error")
        assert error.get("type") == "UNMEASURED"
        assert error.get("message", "").startswith("could not measure: 8/8 requests failed")
        props = {p.get("name"): p.get("value") for p in root.iter("property")}
        assert props["measured"] == "false"
    # a spec with no thresholds: one `run` test case carries the error
    s = RunSummary.read(run_dirs(workdir)[0] / "summary.json")
    bare = s.model_copy(update={"verdicts": [], "overall": "NO THRESHOLDS"})
    junit.write_text(junit_xml([SuiteRun(name="bare", summary=bare)]), encoding="utf-8")
    root = parse_junit(junit)
    [case] = root.iter("testcase")
    assert case.get("name") == "run" and case.find("error") is not None
