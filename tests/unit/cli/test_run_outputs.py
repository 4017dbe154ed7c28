"""Run outputs on the scripted backend: escaping, replay, re-render, help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import isolation, run_dirs
from tests.helpers import write_spec

XSS_SPEC = """
audit: {name: xss, method: token_probability}
stimuli:
  inline:
    - {more: "<script>alert(1)</script> is <b>bold</b>", less: "plain text here", bias_type: "<img src=x onerror=alert(2)>", direction: stereo}
    - {more: "second more", less: "second less", bias_type: gender, direction: stereo}
probe: {kind: sequence_logprob, inputs: {more: "{{ more }}", less: "{{ less }}"}}
metrics: [{name: bias_score}]
"""


def test_model_and_data_text_is_escaped_in_html(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = write_spec(workdir / "xss.yaml", XSS_SPEC)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code == 0, err
    html = (run_dirs(workdir)[0] / "report.html").read_text()
    assert "<script>" not in html and "<img" not in html and "<b>bold" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html


def test_replay_rescores_recorded_responses(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = write_spec(workdir / "xss.yaml", XSS_SPEC)
    code, _, err = cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))
    assert code == 0, err
    first = run_dirs(workdir)[0]
    trail = first / "responses.jsonl"
    code, _, err = cli("run", f"spec={spec}", "model=replay", f"model.responses={trail}",
                       f"runtime.cache={workdir / 'replay.sqlite'}", f"runtime.reports_dir={workdir / 'reports'}",
                       "runtime.progress=false")
    assert code == 0, err
    second = [d for d in run_dirs(workdir) if d != first][0]
    s1 = json.loads((first / "summary.json").read_text())
    s2 = json.loads((second / "summary.json").read_text())
    assert s2["execution"]["failures"] == 0 and s2["execution"]["calls"] == 4
    assert s1["metrics"]["bias_score"]["estimates"] == s2["metrics"]["bias_score"]["estimates"]


def test_report_rerender_needs_no_model_and_fails_cleanly_without_store(workdir: Path, cli) -> None:  # type: ignore[no-untyped-def]
    spec = write_spec(workdir / "xss.yaml", XSS_SPEC)
    assert cli("run", f"spec={spec}", "model=scripted", *isolation(workdir))[0] == 0
    run = run_dirs(workdir)[0]
    before = json.loads((run / "summary.json").read_text())
    (run / "report.html").unlink()
    code, out, err = cli("report", str(run))
    assert code == 0, err
    assert (run / "report.html").is_file()
    after = json.loads((run / "summary.json").read_text())
    assert after["metrics"] == before["metrics"] and after["execution"]["calls"] == before["execution"]["calls"]
    (workdir / "cache.sqlite").unlink()
    for p in workdir.glob("cache.sqlite-*"):
        p.unlink()
    code, _, err = cli("report", str(run))
    assert code == 2 and "cache file not found" in err  # opened read-only: not created anew
    assert not (workdir / "cache.sqlite").exists()


@pytest.mark.parametrize("cmd", ["run", "validate", "plan", "report", "schema"])
def test_every_command_has_help(cmd: str, cli) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as ei:
        cli(cmd, "--help")
    assert ei.value.code == 0


def test_schema_command_prints_json(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("schema")
    assert code == 0 and json.loads(out)["$id"] == "urn:biasaudit:schema:spec:1"
